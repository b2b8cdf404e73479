package impact

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/regghost/regghost/pkg/catalog"
	"github.com/regghost/regghost/pkg/decode"
	"github.com/regghost/regghost/pkg/etcdscan"
)

// Decrypter decrypts values encrypted at rest (*decrypt.Decrypter).
type Decrypter interface {
	Decrypt(ctx context.Context, key string, gr schema.GroupResource, data []byte) ([]byte, error)
}

// Analyze works out, from the keyspace in store, what deleting each target
// sets in motion. dec, when set, decrypts encrypted values.
func Analyze(ctx context.Context, store etcdscan.Store, registry string, targets []etcdscan.Finding, dec Decrypter) (*Report, error) {
	a := &analysis{ctx: ctx, store: store, registry: registry, dec: dec, rep: &Report{Effects: map[string][]Effect{}},
		targets: map[string]bool{}, byUID: map[string]string{}}
	for _, t := range targets {
		a.targets[t.Key] = true
	}
	var namespaces []string
	clusterScoped := false
	for _, t := range targets {
		uid, err := a.target(t)
		if err != nil {
			return nil, err
		}
		if uid == "" {
			continue
		}
		a.byUID[uid] = t.Key
		if t.Namespace == "" {
			clusterScoped = true
		} else if !contains(namespaces, t.Namespace) {
			namespaces = append(namespaces, t.Namespace)
		}
	}
	if len(a.byUID) > 0 {
		if err := a.dependents(namespaces, clusterScoped); err != nil {
			return nil, err
		}
	}
	return a.rep, nil
}

type analysis struct {
	ctx      context.Context
	store    etcdscan.Store
	registry string
	dec      Decrypter
	rep      *Report
	targets  map[string]bool
	// byUID maps each target's UID to its key.
	byUID map[string]string
	pvs   []storedPV
	// pvsLoaded is set once the PersistentVolumes were read.
	pvsLoaded bool
}

func (a *analysis) add(key string, e Effect) { a.rep.Effects[key] = append(a.rep.Effects[key], e) }

// target records the effects of deleting one key and returns its UID.
func (a *analysis) target(t etcdscan.Finding) (string, error) {
	kv, err := a.store.Get(a.ctx, t.Key)
	if err != nil || kv == nil {
		return "", err
	}
	k, err := etcdscan.ParseKey(a.registry, t.Key)
	if err != nil {
		return "", nil
	}
	obj, err := a.read(k, kv.Value)
	if err != nil {
		if t.Has(etcdscan.ClassUndecodable) || t.Has(etcdscan.ClassEncryptedUnknown) {
			// The API server never read it: no informer holds it, and its
			// DELETE event carries nothing a controller can act on.
			return "", nil
		}
		if k.Prefix == "persistentvolumeclaims" {
			return "", a.claim(t.Key, k.Namespace, k.Name, "")
		}
		a.add(t.Key, Effect{Kind: Unknown, Irreversible: true, WayOut: AcceptImpactFlag + " " + string(Unknown),
			Summary: "its value cannot be read here (" + oneLine(err) + "), so what its deletion sets in motion is unknown; pass --encryption-provider-config if it is encrypted"})
		return "", nil
	}
	m, err := metaOf(obj)
	if err != nil {
		return "", nil
	}
	if fins := m.GetFinalizers(); len(fins) > 0 {
		a.add(t.Key, Effect{Kind: FinalizersSkipped, Objects: fins,
			Summary: fmt.Sprintf("finalizers [%s] never run: the cleanup they guard is skipped (a restore brings them back)", strings.Join(fins, ", "))})
	}
	switch o := obj.(type) {
	case *corev1.PersistentVolumeClaim:
		if err := a.claim(t.Key, o.Namespace, o.Name, string(o.UID)); err != nil {
			return "", err
		}
	case *corev1.Pod:
		if o.Spec.NodeName != "" {
			a.add(t.Key, Effect{Kind: ContainersStopped,
				Summary: "the kubelet on node " + o.Spec.NodeName + " stops its containers; a restore starts them again, fresh"})
		}
	case *corev1.Service:
		if o.Spec.Type == corev1.ServiceTypeLoadBalancer {
			ing := ""
			for _, i := range o.Status.LoadBalancer.Ingress {
				ing += " " + i.IP + i.Hostname
			}
			a.add(t.Key, Effect{Kind: LoadBalancerDeleted, Irreversible: true, WayOut: AcceptImpactFlag + " " + string(LoadBalancerDeleted),
				Summary: "the service controller deletes its cloud load balancer" + ing + "; a restore gets a new one, with a new address"})
		}
	case *corev1.Node:
		a.add(t.Key, Effect{Kind: PodsOnNodeDeleted, Irreversible: true, WayOut: AcceptImpactFlag + " " + string(PodsOnNodeDeleted),
			Summary: "the pod garbage collector force-deletes every pod bound to node " + o.Name + " about 40s later"})
	case *corev1.Namespace:
		a.add(t.Key, Effect{Kind: ControllerActs,
			Summary: "every object still stored in namespace " + o.Name + " becomes an orphaned-namespace ghost (a restore brings the namespace back)"})
	case *corev1.ServiceAccount:
		a.add(t.Key, Effect{Kind: ControllerActs,
			Summary: "the token controller deletes its legacy token Secrets; a \"default\" ServiceAccount is recreated with a new UID"})
	case *corev1.PersistentVolume:
		a.add(t.Key, Effect{Kind: ControllerActs,
			Summary: "its claim goes Lost; the storage behind it is not deleted but no longer tracked"})
	case *apiextensionsv1.CustomResourceDefinition:
		a.add(t.Key, Effect{Kind: ControllerActs,
			Summary: "its custom resources stay in etcd as unserved-type ghosts"})
	default:
		if group, ok := catalog.GroupOfPrefix(k.Prefix); ok && !catalog.IsBuiltinGroup(group) {
			a.add(t.Key, Effect{Kind: OperatorMayAct,
				Summary: "the operator of " + k.Prefix + ", if one runs, may act on the DELETE event (clean up what it manages)"})
		}
	}
	return string(m.GetUID()), nil
}

// read decodes a stored value, decrypting it first when it can.
func (a *analysis) read(k etcdscan.Key, value []byte) (runtime.Object, error) {
	obj, meta, err := decode.Typed(value)
	if err == nil || meta == nil || meta.Encryption == nil || a.dec == nil {
		return obj, err
	}
	r := catalog.Release().ResourceFor(k.Prefix)
	plain, derr := a.dec.Decrypt(a.ctx, etcdscan.ObjectKey(a.registry, k.Prefix, k.Namespace, k.Name), schema.GroupResource{Group: r.Group, Resource: r.Resource}, value)
	if derr != nil {
		return nil, derr
	}
	obj, _, err = decode.Typed(plain)
	return obj, err
}

func metaOf(obj runtime.Object) (metav1.Object, error) {
	type accessor interface{ GetObjectMeta() metav1.Object }
	if o, ok := obj.(accessor); ok {
		return o.GetObjectMeta(), nil
	}
	if o, ok := obj.(metav1.Object); ok {
		return o, nil
	}
	return nil, fmt.Errorf("%T has no metadata", obj)
}

// storedPV is a PersistentVolume read from the keyspace.
type storedPV struct {
	key string
	rev int64
	pv  *corev1.PersistentVolume
}

// claim records what deleting a PersistentVolumeClaim does to the volume
// bound to it (by the PV's claimRef; uid is empty when the claim could not
// be read).
func (a *analysis) claim(key, ns, name, uid string) error {
	if err := a.loadPVs(); err != nil {
		return err
	}
	for _, p := range a.pvs {
		ref := p.pv.Spec.ClaimRef
		if ref == nil || ref.Namespace != ns || ref.Name != name || (uid != "" && string(ref.UID) != uid) {
			continue
		}
		v := &Volume{Name: p.pv.Name, Key: p.key, ModRevision: p.rev, ReclaimPolicy: string(p.pv.Spec.PersistentVolumeReclaimPolicy)}
		if p.pv.Spec.HostPath != nil {
			v.HostPath = p.pv.Spec.HostPath.Path
		}
		where := ""
		if v.HostPath != "" {
			where = " (" + v.HostPath + ")"
		}
		switch p.pv.Spec.PersistentVolumeReclaimPolicy {
		case corev1.PersistentVolumeReclaimDelete, corev1.PersistentVolumeReclaimRecycle:
			verb := "deletes"
			if v.ReclaimPolicy == string(corev1.PersistentVolumeReclaimRecycle) {
				verb = "scrubs"
			}
			a.add(key, Effect{Kind: StorageDestroyed, Irreversible: true, WayOut: RetainVolumesFlag, Objects: []string{p.key}, Volume: v,
				Summary: fmt.Sprintf("the PersistentVolume controller releases PV %s (reclaim policy %s) and %s its storage%s", v.Name, v.ReclaimPolicy, verb, where)})
		default:
			a.add(key, Effect{Kind: VolumeReleased, Objects: []string{p.key}, Volume: v,
				Summary: fmt.Sprintf("PV %s (reclaim policy %s) goes Released and keeps its data%s; a restore binds the claim to it again", v.Name, v.ReclaimPolicy, where)})
		}
	}
	return nil
}

func (a *analysis) loadPVs() error {
	if a.pvsLoaded {
		return nil
	}
	a.pvsLoaded = true
	start := a.registry + "persistentvolumes/"
	return a.store.Range(a.ctx, start, etcdscan.PrefixEnd(start), false, func(kv *mvccpb.KeyValue) error {
		obj, _, err := decode.Typed(kv.Value)
		if pv, ok := obj.(*corev1.PersistentVolume); err == nil && ok {
			a.pvs = append(a.pvs, storedPV{key: string(kv.Key), rev: kv.ModRevision, pv: pv})
		}
		return nil
	})
}

// owned is an object with ownerReferences, met while looking for dependents.
type owned struct {
	key    string
	uid    string
	owners []string
}

// dependents finds, transitively, the objects the garbage collector deletes
// once the targets are gone: those every owner of which is gone. Namespaced
// owners have dependents only in their namespace; cluster-scoped ones
// anywhere, which takes a walk of the whole keyspace.
func (a *analysis) dependents(namespaces []string, clusterScoped bool) error {
	var edges []owned
	collect := func(kv *mvccpb.KeyValue) error {
		obj, err := decode.Meta(kv.Value)
		if err != nil || len(obj.Meta.OwnerReferences) == 0 {
			return nil
		}
		o := owned{key: string(kv.Key), uid: string(obj.Meta.UID)}
		for _, r := range obj.Meta.OwnerReferences {
			o.owners = append(o.owners, string(r.UID))
		}
		edges = append(edges, o)
		return nil
	}
	if clusterScoped {
		if err := a.store.Range(a.ctx, a.registry, etcdscan.PrefixEnd(a.registry), false, collect); err != nil {
			return err
		}
	} else {
		for _, ns := range namespaces {
			if err := etcdscan.WalkNamespace(a.ctx, a.store, a.registry, ns, false, collect); err != nil {
				return err
			}
		}
	}
	uids := make([]string, 0, len(a.byUID))
	for uid := range a.byUID {
		uids = append(uids, uid)
	}
	sort.Strings(uids)
	for _, uid := range uids {
		key := a.byUID[uid]
		gone := map[string]bool{}
		for u := range a.byUID {
			gone[u] = true
		}
		var deleted, purged []string
		frontier := []string{uid}
		seen := map[string]bool{}
		for len(frontier) > 0 {
			next := []string{}
			for _, e := range edges {
				if seen[e.key] || !ownedBy(e, frontier) || !allIn(e.owners, gone) {
					continue
				}
				seen[e.key] = true
				if a.targets[e.key] {
					purged = append(purged, e.key)
				} else {
					deleted = append(deleted, e.key)
				}
				gone[e.uid] = true
				next = append(next, e.uid)
			}
			frontier = next
		}
		sort.Strings(deleted)
		sort.Strings(purged)
		if len(deleted) > 0 {
			a.add(key, Effect{Kind: DependentsDeleted, Irreversible: true, Objects: deleted, WayOut: AcceptImpactFlag + " " + string(DependentsDeleted),
				Summary: fmt.Sprintf("the garbage collector deletes %d dependents this purge does not back up: %s", len(deleted), strings.Join(deleted, ", "))})
		}
		if len(purged) > 0 {
			a.add(key, Effect{Kind: DependentsPurged, Objects: purged,
				Summary: fmt.Sprintf("its %d dependents are in this purge too (backed up): %s", len(purged), strings.Join(purged, ", "))})
		}
	}
	return nil
}

func ownedBy(e owned, uids []string) bool {
	for _, o := range e.owners {
		if contains(uids, o) {
			return true
		}
	}
	return false
}

func allIn(xs []string, set map[string]bool) bool {
	for _, x := range xs {
		if !set[x] {
			return false
		}
	}
	return true
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func oneLine(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
