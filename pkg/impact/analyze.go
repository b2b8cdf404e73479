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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/regghost/regghost/pkg/catalog"
	"github.com/regghost/regghost/pkg/decode"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/objread"
	"github.com/regghost/regghost/pkg/plural"
	"github.com/regghost/regghost/pkg/resolve"
)

// Decrypter decrypts values encrypted at rest (*decrypt.Decrypter).
type Decrypter interface {
	Decrypt(ctx context.Context, key string, gr schema.GroupResource, data []byte) ([]byte, error)
}

// APIReader reads a whole object through the API server (*apiview.View),
// which holds the encryption keys regghost may lack.
type APIReader interface {
	Object(ctx context.Context, r catalog.Resource, namespace, name string) (*unstructured.Unstructured, error)
}

// Readers are the ways to read a value regghost cannot decode by itself,
// and the API server's discovery; any may be nil.
type Readers struct {
	Decrypter Decrypter
	API       APIReader
	// Served is the API server's discovery, for the shared resolver.
	Served *catalog.Catalog
}

// Analyze works out, from the keyspace in store (and the API server where it
// answers, for values encrypted with keys regghost lacks), what deleting
// each target sets in motion.
func Analyze(ctx context.Context, store etcdscan.Store, registry string, targets []etcdscan.Finding, readers Readers) (*Report, error) {
	var dec resolve.Decrypter
	if readers.Decrypter != nil {
		dec = readers.Decrypter
	}
	types, err := resolve.Load(ctx, store, registry, readers.Served, dec)
	if err != nil {
		return nil, err
	}
	reader := &objread.Reader{Registry: registry, Types: types, Decrypter: dec}
	if readers.API != nil {
		reader.API = readers.API
	}
	a := &analysis{ctx: ctx, store: store, registry: registry, types: types, reader: reader, rep: &Report{Effects: map[string][]Effect{}},
		targets: map[string]bool{}, byUID: map[string]string{}, byName: map[ownerID]string{}}
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
			// An owner whose value cannot be read is recognised by its
			// dependents' references: group, kind and name. The kind of a
			// custom resource comes from its CRD key; when that cannot be
			// read either, any kind of the group matches (kind "").
			k, err := etcdscan.ParseKey(registry, t.Key)
			if err != nil {
				continue
			}
			r, _ := a.types.Resource(k.Prefix)
			a.byName[ownerID{group: r.Group, kind: r.Kind, namespace: k.Namespace, name: k.Name}] = t.Key
		} else {
			a.byUID[uid] = t.Key
		}
		if t.Namespace == "" {
			clusterScoped = true
		} else if !contains(namespaces, t.Namespace) {
			namespaces = append(namespaces, t.Namespace)
		}
	}
	if len(a.byUID)+len(a.byName) > 0 {
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
	// types is the shared resolver; reader reads every value whose fields
	// a decision needs.
	types   *resolve.Resolver
	reader  *objread.Reader
	rep     *Report
	targets map[string]bool
	// byUID maps each target's UID to its key; byName the targets whose
	// value cannot be read, by what an ownerReference to them says.
	byUID  map[string]string
	byName map[ownerID]string
	pvs    []storedPV
	// unreadablePVs are the PersistentVolumes nobody here could read, with why.
	unreadablePVs []string
	// pvsLoaded is set once the PersistentVolumes were read.
	pvsLoaded bool
	// contents are the VolumeSnapshotContents, unreadableContents those
	// nobody here could read; contentsLoaded is set once they were read.
	contents           []storedContent
	unreadableContents []unreadableContent
	contentsLoaded     bool
	// callers are the webhooks and APIServices that call Services,
	// unreadableCallers those nobody here could read; callersLoaded is set
	// once they were read.
	callers           []caller
	unreadableCallers []string
	callersLoaded     bool
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
	obj, err := a.reader.Read(a.ctx, t.Key, kv.Value)
	if err != nil {
		// A claim is found from its volume's claimRef, readable or not: the
		// PV controller releases the volume of a claim it cannot find.
		if k.Prefix == "persistentvolumeclaims" {
			if err := a.claim(t.Key, k.Namespace, k.Name, "", ""); err != nil {
				return "", err
			}
		}
		if t.Has(etcdscan.ClassUndecodable) || t.Has(etcdscan.ClassEncryptedUnknown) {
			// Nobody can read it: no informer holds it, and its DELETE event
			// carries nothing a controller can act on beyond the above.
			return "", nil
		}
		a.add(t.Key, Effect{Kind: Unknown, Irreversible: true, WayOut: AcceptImpactFlag + " " + string(Unknown),
			Summary: "what its deletion sets in motion is unknown: " + oneLine(err) + "; pass --encryption-provider-config, or let the API server answer"})
		return "", nil
	}
	m, err := metaOf(obj)
	if err != nil {
		return "", nil
	}
	if err := a.liveController(t.Key, k.Namespace, m.GetOwnerReferences()); err != nil {
		return "", err
	}
	if fins := m.GetFinalizers(); len(fins) > 0 {
		a.add(t.Key, Effect{Kind: FinalizersSkipped, Objects: fins,
			Summary: fmt.Sprintf("finalizers [%s] never run: the cleanup they guard is skipped (a restore brings them back)", strings.Join(fins, ", "))})
		for _, e := range deleteEffects(fins) {
			a.add(t.Key, e)
		}
	}
	has := func(kind Kind) bool {
		for _, e := range a.rep.Effects[t.Key] {
			if e.Kind == kind {
				return true
			}
		}
		return false
	}
	if u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj); err == nil {
		if err := a.objectEffects(t.Key, k.Prefix, u, has); err != nil {
			return "", err
		}
	}
	switch o := obj.(type) {
	case *corev1.PersistentVolumeClaim:
		if err := a.claim(t.Key, o.Namespace, o.Name, string(o.UID), o.Spec.VolumeName); err != nil {
			return "", err
		}
	case *corev1.Pod:
		if o.Spec.NodeName != "" {
			a.add(t.Key, Effect{Kind: ContainersStopped,
				Summary: "the kubelet on node " + o.Spec.NodeName + " stops its containers; a restore starts them again, fresh"})
		}
		if err := a.protectedClaims(t.Key, o); err != nil {
			return "", err
		}
	case *corev1.Service:
		if err := a.serviceCallers(t.Key, o.Namespace, o.Name); err != nil {
			return "", err
		}
		if o.Spec.Type == corev1.ServiceTypeLoadBalancer && !has(LoadBalancerDeleted) && !has(LoadBalancerLeaked) {
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

// replacement says what a live controller does when an object it manages
// disappears, by the controller's kind (pkg/controller at v1.37).
var replacement = map[string]string{
	"StatefulSet":           "recreates it under the same name, so a restore then conflicts",
	"Deployment":            "recreates it under the same name, so a restore then conflicts",
	"DaemonSet":             "creates a new one; a restore adds a duplicate, which it deletes",
	"ReplicaSet":            "creates a replacement; a restore adds a surplus, which it scales down",
	"ReplicationController": "creates a replacement; a restore adds a surplus, which it scales down",
	"Job":                   "creates a replacement and counts the loss",
}

// liveController notes the controller owner that is still alive (not a
// target) and reacts to the object's deletion.
func (a *analysis) liveController(key, ns string, refs []metav1.OwnerReference) error {
	for _, r := range refs {
		if r.Controller == nil || !*r.Controller {
			continue
		}
		gv, err := schema.ParseGroupVersion(r.APIVersion)
		if err != nil {
			continue
		}
		res, ok := a.types.ForKind(gv.Group, r.Kind)
		if !ok {
			continue
		}
		owner := res.Namespaced
		ownerNS := ""
		if owner {
			ownerNS = ns
		}
		ownerKey := etcdscan.ObjectKey(a.registry, res.Prefix(), ownerNS, r.Name)
		if a.targets[ownerKey] {
			continue
		}
		kv, err := a.store.Get(a.ctx, ownerKey)
		if err != nil {
			return err
		}
		if kv == nil {
			continue
		}
		if obj, err := decode.Meta(kv.Value); err == nil && obj.Encryption == nil && obj.Meta.UID != r.UID {
			continue
		}
		what, ok := replacement[r.Kind]
		if !ok {
			what = "may create it again"
		}
		a.add(key, Effect{Kind: ControllerActs, Objects: []string{ownerKey},
			Summary: fmt.Sprintf("its controller %s %s is alive and %s", r.Kind, r.Name, what)})
	}
	return nil
}

// protectedClaims finds the claims a pod holds back from deletion: a claim
// already Terminating waits for pvc-protection, which lets it go (and its
// volume with it) once no pod uses it.
func (a *analysis) protectedClaims(key string, pod *corev1.Pod) error {
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		claimKey := etcdscan.ObjectKey(a.registry, "persistentvolumeclaims", pod.Namespace, v.PersistentVolumeClaim.ClaimName)
		if a.targets[claimKey] {
			continue
		}
		kv, err := a.store.Get(a.ctx, claimKey)
		if err != nil || kv == nil {
			return err
		}
		obj, err := a.reader.Read(a.ctx, claimKey, kv.Value)
		if err != nil {
			a.add(key, Effect{Kind: Unknown, Irreversible: true, WayOut: AcceptImpactFlag + " " + string(Unknown), Objects: []string{claimKey},
				Summary: "this pod uses claim " + v.PersistentVolumeClaim.ClaimName + ", and whether deleting the pod lets it (and its volume) go is unknown: " + oneLine(err)})
			continue
		}
		pvc, ok := obj.(*corev1.PersistentVolumeClaim)
		if !ok || pvc.DeletionTimestamp == nil {
			continue
		}
		a.add(key, Effect{Kind: ControllerActs, Objects: []string{claimKey},
			Summary: "claim " + pvc.Name + " is Terminating and held only by pvc-protection while this pod uses it: deleting the pod lets the claim go"})
		if err := a.claim(key, pvc.Namespace, pvc.Name, string(pvc.UID), pvc.Spec.VolumeName); err != nil {
			return err
		}
	}
	return nil
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
// bound to it: the PV whose claimRef names it (uid is empty when the claim
// could not be read), or the PV it names (volume). A volume that cannot be
// read makes the effect unknown, never nothing.
func (a *analysis) claim(key, ns, name, uid, volume string) error {
	if err := a.loadPVs(); err != nil {
		return err
	}
	found := false
	for _, p := range a.pvs {
		ref := p.pv.Spec.ClaimRef
		byRef := ref != nil && ref.Namespace == ns && ref.Name == name && (uid == "" || string(ref.UID) == uid)
		if !byRef && (volume == "" || p.pv.Name != volume) {
			continue
		}
		found = true
		a.volumeEffect(key, p)
	}
	if found || len(a.unreadablePVs) == 0 {
		return nil
	}
	// The claim's volume may be among those nobody here can read.
	unreadable := a.unreadablePVs
	if volume != "" {
		unreadable = nil
		for _, u := range a.unreadablePVs {
			if strings.HasPrefix(u, a.registry+"persistentvolumes/"+volume+" ") {
				unreadable = append(unreadable, u)
			}
		}
		if len(unreadable) == 0 {
			return nil
		}
	}
	a.add(key, Effect{Kind: Unknown, Irreversible: true, WayOut: AcceptImpactFlag + " " + string(Unknown),
		Summary: fmt.Sprintf("whether the PersistentVolume controller destroys this claim's storage is unknown: %d PersistentVolumes cannot be read here (%s); pass --encryption-provider-config, or let the API server answer",
			len(unreadable), strings.Join(unreadable, "; "))})
	return nil
}

// volumeEffect records what happens to the volume p when its claim goes.
func (a *analysis) volumeEffect(key string, p storedPV) {
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

// loadPVs reads every PersistentVolume, through the content reader: an
// encrypted one is decrypted or read through the API server, and one
// nobody can read is remembered with why.
func (a *analysis) loadPVs() error {
	if a.pvsLoaded {
		return nil
	}
	a.pvsLoaded = true
	start := a.registry + "persistentvolumes/"
	return a.store.Range(a.ctx, start, etcdscan.PrefixEnd(start), false, func(kv *mvccpb.KeyValue) error {
		obj, err := a.reader.Read(a.ctx, string(kv.Key), kv.Value)
		if err != nil {
			a.unreadablePVs = append(a.unreadablePVs, string(kv.Key)+" ("+oneLine(err)+")")
			return nil
		}
		if pv, ok := obj.(*corev1.PersistentVolume); ok {
			a.pvs = append(a.pvs, storedPV{key: string(kv.Key), rev: kv.ModRevision, pv: pv})
		}
		return nil
	})
}

// owned is an object with ownerReferences, met while looking for dependents.
type owned struct {
	key    string
	uid    string
	owners []metav1.OwnerReference
	ns     string
}

// ownerID is what an ownerReference says of an owner besides its UID.
type ownerID struct{ group, kind, namespace, name string }

// dependents finds, transitively, the objects the garbage collector deletes
// once the targets are gone: those every owner of which is gone (a target,
// a dependent deleted before it, or an owner that is not there at all).
// Namespaced owners have dependents only in their namespace; cluster-scoped
// ones anywhere, which takes a walk of the whole keyspace.
func (a *analysis) dependents(namespaces []string, clusterScoped bool) error {
	var edges []owned
	seen := map[string]bool{}
	unreadable := map[string]int{}
	collect := func(kv *mvccpb.KeyValue) error {
		key := string(kv.Key)
		obj, err := decode.Meta(kv.Value)
		if err == nil && obj.Encryption != nil {
			var full runtime.Object
			if full, err = a.reader.Read(a.ctx, key, kv.Value); err == nil {
				if m, merr := metaOf(full); merr == nil {
					obj.Meta = metav1.ObjectMeta{UID: m.GetUID(), OwnerReferences: m.GetOwnerReferences(), Namespace: m.GetNamespace(), Annotations: m.GetAnnotations()}
				}
			}
		}
		if err != nil {
			if !a.targets[key] {
				k, _ := etcdscan.ParseKey(a.registry, key)
				unreadable[k.Namespace]++
			}
			return nil
		}
		seen[string(obj.Meta.UID)] = true
		owners := obj.Meta.OwnerReferences
		// The token controller deletes the legacy token Secrets of a
		// deleted ServiceAccount, as if it owned them.
		if uid := obj.Meta.Annotations[corev1.ServiceAccountUIDKey]; uid != "" {
			owners = append(owners, metav1.OwnerReference{APIVersion: "v1", Kind: "ServiceAccount",
				Name: obj.Meta.Annotations[corev1.ServiceAccountNameKey], UID: types.UID(uid)})
		}
		if len(owners) > 0 {
			k, _ := etcdscan.ParseKey(a.registry, key)
			edges = append(edges, owned{key: key, uid: string(obj.Meta.UID), owners: owners, ns: k.Namespace})
		}
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
	var roots []string
	for _, key := range a.byUID {
		roots = append(roots, key)
	}
	for _, key := range a.byName {
		roots = append(roots, key)
	}
	sort.Strings(roots)
	for _, key := range roots {
		// gone holds the UIDs that will not be there: every target's, and
		// the dependents found so far.
		gone := map[string]bool{}
		for u := range a.byUID {
			gone[u] = true
		}
		frontier := map[string]bool{}
		for u, k := range a.byUID {
			if k == key {
				frontier[u] = true
			}
		}
		var deleted, purged []string
		done := map[string]bool{}
		for first := true; first || len(frontier) > 0; first = false {
			next := map[string]bool{}
			for _, e := range edges {
				if done[e.key] {
					continue
				}
				hit, all := false, true
				for _, r := range e.owners {
					uid := string(r.UID)
					nameKey, byName := a.ownerByName(e, r)
					switch {
					case frontier[uid] || (first && byName && nameKey == key):
						hit = true
					case gone[uid] || byName:
						// Another target of this purge.
					case !seen[uid]:
						// Not there at all: the garbage collector finds it gone.
					default:
						all = false
					}
				}
				if !hit || !all {
					continue
				}
				done[e.key] = true
				if a.targets[e.key] {
					purged = append(purged, e.key)
				} else {
					deleted = append(deleted, e.key)
					if err := a.dependentClaim(key, e.key); err != nil {
						return err
					}
				}
				gone[e.uid] = true
				next[e.uid] = true
			}
			frontier = next
		}
		sort.Strings(deleted)
		sort.Strings(purged)
		if len(deleted) > 0 {
			a.add(key, Effect{Kind: DependentsDeleted, Irreversible: true, Objects: deleted, WayOut: AcceptImpactFlag + " " + string(DependentsDeleted),
				Summary: fmt.Sprintf("the garbage collector (the token controller, for legacy token Secrets) deletes %s this purge does not back up: %s", plural.Of(len(deleted), "dependent"), strings.Join(deleted, ", "))})
		}
		if len(purged) > 0 {
			a.add(key, Effect{Kind: DependentsPurged, Objects: purged,
				Summary: fmt.Sprintf("its %d dependents are in this purge too (backed up): %s", len(purged), strings.Join(purged, ", "))})
		}
		k, _ := etcdscan.ParseKey(a.registry, key)
		if n := unreadable[k.Namespace]; n > 0 || (k.Namespace == "" && len(unreadable) > 0) {
			if k.Namespace == "" {
				for _, c := range unreadable {
					n += c
				}
			}
			a.add(key, Effect{Kind: Unknown, Irreversible: true, WayOut: AcceptImpactFlag + " " + string(Unknown),
				Summary: fmt.Sprintf("%s where its dependents could be cannot be read here, so whether the garbage collector deletes them is unknown; pass --encryption-provider-config, or let the API server answer", plural.Of(n, "value"))})
		}
	}
	return nil
}

// ownerByName finds the unreadable target an ownerReference points at.
func (a *analysis) ownerByName(e owned, r metav1.OwnerReference) (string, bool) {
	gv, _ := schema.ParseGroupVersion(r.APIVersion)
	for _, ns := range []string{e.ns, ""} {
		for _, kind := range []string{r.Kind, ""} {
			if key, ok := a.byName[ownerID{group: gv.Group, kind: kind, namespace: ns, name: r.Name}]; ok {
				return key, true
			}
		}
	}
	return "", false
}

// dependentClaim gives a target the storage effects of a claim the garbage
// collector deletes because of it: a dependent PVC destroys its volume's
// storage just as a purged one would, and --retain-volumes covers it.
func (a *analysis) dependentClaim(target, dependent string) error {
	k, err := etcdscan.ParseKey(a.registry, dependent)
	if err != nil || k.Prefix != "persistentvolumeclaims" {
		return nil
	}
	kv, err := a.store.Get(a.ctx, dependent)
	if err != nil || kv == nil {
		return err
	}
	uid, volume := "", ""
	if obj, err := a.reader.Read(a.ctx, dependent, kv.Value); err == nil {
		if c, ok := obj.(*corev1.PersistentVolumeClaim); ok {
			uid, volume = string(c.UID), c.Spec.VolumeName
		}
	}
	return a.claim(target, k.Namespace, k.Name, uid, volume)
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
