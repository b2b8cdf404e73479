package recovery

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/regghost/regghost/pkg/catalog"
	"github.com/regghost/regghost/pkg/decode"
	"github.com/regghost/regghost/pkg/decrypt"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/flagnames"
	"github.com/regghost/regghost/pkg/resolve"
)

// Action is what the recovery does with an object.
type Action string

// The actions.
const (
	// Recover: absent live, nothing against it: it is written.
	Recover Action = "recover"
	// AlreadyPresent: the live key holds the source's bytes.
	AlreadyPresent Action = "already-present"
	// Exists: the live key holds other bytes (changed since the source); it
	// is never overwritten.
	Exists Action = "exists"
	// Refused: writing it would make a ghost, revive what cannot be taken
	// back, or cannot be judged.
	Refused Action = "refused"
)

// Verdict is the judgement of one object.
type Verdict struct {
	Action Action `json:"action"`
	Detail string `json:"detail,omitempty"`
	// Impacts are what writing it sets off.
	Impacts []Impact `json:"impacts,omitempty"`
	// Needs are the keys that must exist when it is written (its namespace,
	// its CRD), compared at their create revision in the write.
	Needs []Need `json:"needs,omitempty"`
	// Notes are facts worth saying that do not stop the recovery.
	Notes []string `json:"notes,omitempty"`
	// LiveRevision is the live key's mod revision when the object exists
	// live (AlreadyPresent, Exists): the resourceVersion a manifest of it
	// carries, so that applying it fails once the live object changed.
	LiveRevision int64 `json:"liveRevision,omitempty"`
	// ThroughAPI marks a refusal that holds only for recover's own write,
	// the stored bytes put back into etcd (a cluster IP another Service
	// holds, a key the cluster's encryption config may not hold, a version
	// the CRD dropped, a UID that cannot be checked): every other check
	// passed, and its manifest, applied through the API server (which gives
	// it a new UID and addresses and encrypts it as it does any new
	// object, or refuses a version it does not serve), is what the refusal
	// points to. Manifests prints it.
	ThroughAPI bool `json:"throughAPI,omitempty"`
}

// Need is a key that must exist for an object to be written: its namespace,
// its CRD, the owners recovered in the same run that keep it.
type Need struct {
	Key  string `json:"key"`
	What string `json:"what"`
	// Without says what becomes of the object without the key ("" : it
	// would be a ghost).
	Without string `json:"without,omitempty"`
	// CreateRevision is the live key's create revision when it was judged
	// (the write compares it); 0 when this run recovers it first.
	CreateRevision int64 `json:"createRevision,omitempty"`
}

// Reader reads a live value's fields: decrypted, or through the API server.
type Reader interface {
	Read(ctx context.Context, key string, value []byte) (runtime.Object, error)
}

// Options are the live cluster an object is judged against.
type Options struct {
	Registry string
	// Live is the live etcd at its current revision.
	Live Source
	// Reader reads live values (encrypted ones through the API server).
	Reader Reader
	// Cluster is the cluster's encryption config; nil when unknown.
	Cluster *decrypt.Decrypter
	// Types names resources and kinds (owners) as the live cluster does.
	Types *resolve.Resolver
	// Accept are the impacts the user accepted (--accept-impact).
	Accept map[ImpactKind]bool
	// Source is where the objects come from: a namespace or CRD there is
	// compared with the live one of the same name.
	Source Source
	// IntoRecreated writes objects into a namespace or CRD deleted and
	// created again since the source (refused without it).
	IntoRecreated bool
	// Decoders read the source's values (those Select used).
	Decoders Decoders
}

// judge holds what a Judge run learned of the live cluster.
type judge struct {
	Options
	byKey map[string]*Object
	// uids maps each live UID under a storage prefix to its key; unread
	// counts the values there that could not be read.
	uids   map[string]map[string]string
	unread map[string]int
	// encrypted counts the encrypted live values under a prefix.
	encrypted map[string]int
	// addrs are the live Services' addresses, read once.
	addrs *addresses
}

// Judge decides each object's Verdict against the live cluster, in order
// (namespaces and CRDs before what they hold). Nothing is written.
func Judge(ctx context.Context, objs []*Object, o Options) error {
	j := &judge{Options: o, byKey: map[string]*Object{}, uids: map[string]map[string]string{}, unread: map[string]int{}, encrypted: map[string]int{}}
	for _, obj := range objs {
		j.byKey[obj.Key] = obj
	}
	// An object is judged against the verdicts of those it rests on (its
	// Service, its owner), which may come later in key order: it is judged
	// again until no verdict changes. An object not judged yet counts as
	// not recovered, so the first round is the cautious one.
	for round := 0; ; round++ {
		changed := false
		for _, obj := range objs {
			v, err := j.one(ctx, obj)
			if err != nil {
				return err
			}
			changed = changed || v.Action != obj.Action
			obj.Verdict = v
		}
		if !changed || round == maxRounds {
			return nil
		}
	}
}

// maxRounds bounds Judge's rounds: each round can only turn a refusal into a
// recovery where what it rests on is recovered, so chains longer than this
// (an APIService, its Service, ...) do not occur.
const maxRounds = 5

func refused(format string, args ...any) Verdict {
	return Verdict{Action: Refused, Detail: fmt.Sprintf(format, args...)}
}

func (j *judge) one(ctx context.Context, o *Object) (Verdict, error) {
	live, err := j.Live.Get(ctx, o.Key)
	if err != nil {
		return Verdict{}, fmt.Errorf("read %s: %w", o.Key, err)
	}
	if live != nil {
		if bytes.Equal(live.Value, o.Value) {
			return Verdict{Action: AlreadyPresent, Detail: "the live key holds the source's bytes", LiveRevision: live.ModRevision}, nil
		}
		return Verdict{Action: Exists, Detail: fmt.Sprintf("exists live with other content (mod revision %d, changed since the source); never overwritten", live.ModRevision), LiveRevision: live.ModRevision}, nil
	}
	if o.Unreadable != "" {
		return refused("cannot be read here (%s): its namespace, UID and what writing it sets off cannot be checked; give the --encryption-provider-config that holds its key", o.Unreadable), nil
	}
	var v Verdict
	// storeOnly are the refusals of the stored bytes written back that an
	// object applied through the API server does not meet. The other checks
	// go on, so that a manifest is printed only when it passes them all.
	var storeOnly []string
	gr := schema.GroupResource{Group: o.Resource.Group, Resource: o.Resource.Resource}
	switch {
	case j.Cluster != nil:
		if err := j.Cluster.Readable(ctx, o.Key, gr, o.Value); err != nil {
			storeOnly = append(storeOnly, fmt.Sprintf("kube-apiserver could not read it as stored: %v; %s", err, throughAPI))
		} else if o.Encryption != nil {
			v.Notes = append(v.Notes, fmt.Sprintf("written encrypted, as stored (%s key %q, which the cluster's encryption config holds)", o.Encryption.Provider, o.Encryption.KeyName))
		}
	case o.Encryption != nil:
		storeOnly = append(storeOnly, fmt.Sprintf("encrypted with %s key %q: whether the cluster's encryption config still holds that key cannot be told without it; give --encryption-provider-config (the node's), or %s", o.Encryption.Provider, o.Encryption.KeyName, throughAPI))
	default:
		// Plaintext, and the cluster's config unknown: when the cluster
		// encrypts this resource now, a plaintext value may be unreadable
		// (no identity provider).
		if n, err := j.encryptedLive(ctx, o.Parsed.Prefix); err != nil {
			return Verdict{}, err
		} else if n > 0 {
			storeOnly = append(storeOnly, fmt.Sprintf("it is stored in plaintext and %d live values under %s/ are encrypted: whether kube-apiserver reads plaintext there cannot be told without the cluster's encryption config; give --encryption-provider-config (the node's), or %s", n, o.Parsed.Prefix, throughAPI))
		}
	}
	om := o.Meta.Meta
	if om.Name != o.Parsed.Name || om.Namespace != o.Parsed.Namespace {
		// Applied, it would go where the object inside says, which nothing
		// here was judged against: no manifest either.
		return refused("its key names %s but the object inside is %s: the path disagrees with the object, and where it belongs cannot be told; it is neither written nor printed", nsName(o.Parsed.Namespace, o.Parsed.Name), nsName(om.Namespace, om.Name)), nil
	}
	if ns := o.Parsed.Namespace; ns != "" {
		w, err := j.witness(ctx, j.Registry+namespacesPrefix+"/"+ns, "namespace "+ns, "--with-namespace recovers the namespace from the source too, or create it first")
		if err != nil || w.Action == Refused {
			return w, err
		}
		v.Needs = append(v.Needs, w.Needs...)
	}
	if g, ok := customGroup(o.Parsed.Prefix); ok {
		plural := o.Parsed.Prefix[len(g)+1:]
		name := plural + "." + g
		crdKey := j.Registry + resolve.CRDPrefix + name
		w, err := j.witness(ctx, crdKey, "CustomResourceDefinition "+name, "recover the CRD too (its key), or create it first")
		if err != nil || w.Action == Refused {
			return w, err
		}
		v.Needs = append(v.Needs, w.Needs...)
		why, err := j.versionKnown(ctx, crdKey, o.Meta.APIVersion)
		if err != nil {
			return Verdict{}, err
		}
		if why != "" {
			storeOnly = append(storeOnly, why)
		}
	}
	why, err := j.addressTaken(ctx, o)
	if err != nil {
		return Verdict{}, err
	}
	if why != "" {
		storeOnly = append(storeOnly, why)
	} else if svc, ok := o.Obj.(*corev1.Service); ok && len(clusterIPs(svc)) > 0 {
		v.Notes = append(v.Notes, fmt.Sprintf("its cluster IP %s is reserved again when kube-apiserver's repair loop next runs (within minutes): a Service created before then could be given it", strings.Join(clusterIPs(svc), ",")))
	}
	if uid := string(om.UID); uid != "" {
		holder, unread, err := j.uidHolder(ctx, o.Parsed.Prefix, uid)
		if err != nil {
			return Verdict{}, err
		}
		switch {
		case holder != "":
			return refused("its UID %s is held by the live object %s: the same object lives under another key", uid, holder), nil
		case unread > 0:
			// Applied, it is given a new UID.
			storeOnly = append(storeOnly, fmt.Sprintf("whether its UID %s is held by another live object cannot be told: %d live values under %s/ cannot be read here", uid, unread, o.Parsed.Prefix))
		}
	}
	if om.DeletionTimestamp != nil {
		v.Notes = append(v.Notes, fmt.Sprintf("it was being deleted in the source (since %s): it comes back terminating, with finalizers %v", om.DeletionTimestamp.UTC().Format("2006-01-02T15:04:05Z"), om.Finalizers))
	}
	impacts, notes, err := j.impacts(ctx, o)
	if err != nil {
		return Verdict{}, err
	}
	owners, deletedAgain, ownerNotes, err := j.owners(ctx, o)
	if err != nil {
		return Verdict{}, err
	}
	impacts = append(impacts, deletedAgain...)
	v.Needs = append(v.Needs, owners...)
	v.Notes = append(v.Notes, notes...)
	v.Notes = append(v.Notes, ownerNotes...)
	var unaccepted []string
	for i := range impacts {
		impacts[i].Accepted = j.Accept[impacts[i].Kind]
		if !impacts[i].Accepted {
			unaccepted = append(unaccepted, fmt.Sprintf("%s (%s; --accept-impact %s)", impacts[i].Detail, impacts[i].Kind, impacts[i].Kind))
		}
	}
	v.Impacts = impacts
	if len(unaccepted) > 0 {
		v.Action, v.Detail = Refused, strings.Join(append(unaccepted, storeOnly...), "; ")
		return v, nil
	}
	if len(storeOnly) > 0 {
		v.Action, v.Detail, v.ThroughAPI = Refused, strings.Join(storeOnly, "; "), true
		return v, nil
	}
	v.Action = Recover
	return v, nil
}

// owners judges o's owner references as the garbage collector will: when
// none of its owners exists, live (with its UID) or recovered by this run,
// it deletes o again (DeletedAgain); a kind unknown here is noted. When
// only owners this run recovers keep it, o needs them: it is written after
// them, comparing their create revision, and not when they were not
// written (Write).
func (j *judge) owners(ctx context.Context, o *Object) ([]Need, []Impact, []string, error) {
	m, err := meta.Accessor(o.Obj)
	if err != nil || len(m.GetOwnerReferences()) == 0 {
		return nil, nil, nil, nil
	}
	var recovered []Need
	var gone, unknown []string
	for _, ref := range m.GetOwnerReferences() {
		gv, _ := schema.ParseGroupVersion(ref.APIVersion)
		res, ok := j.Types.ForKind(gv.Group, ref.Kind)
		if !ok {
			unknown = append(unknown, ref.Kind+" "+ref.Name)
			continue
		}
		ns := o.Parsed.Namespace
		if !res.Namespaced {
			ns = ""
		}
		key := etcdscan.ObjectKey(j.Registry, res.Prefix(), ns, ref.Name)
		if w := j.byKey[key]; w != nil && w.Action == Recover && w.Meta != nil && (ref.UID == "" || w.Meta.Meta.UID == ref.UID) {
			recovered = append(recovered, Need{Key: key, What: "its owner " + ref.Kind + " " + ref.Name, Without: "the garbage collector would delete it again"})
			continue
		}
		alive, err := j.alive(ctx, key, string(ref.UID))
		if err != nil {
			return nil, nil, nil, err
		}
		if alive {
			// A live owner keeps it, whatever becomes of the others.
			return nil, nil, nil, nil
		}
		gone = append(gone, ref.Kind+" "+ref.Name)
	}
	switch {
	case len(recovered) > 0:
		return recovered, nil, nil, nil
	case len(unknown) > 0:
		return nil, nil, []string{fmt.Sprintf("whether its owners %s exist cannot be told (kind unknown here): if none does, the garbage collector deletes it again", strings.Join(unknown, ", "))}, nil
	case len(gone) > 0:
		return nil, []Impact{{Kind: DeletedAgain, Detail: fmt.Sprintf("its owners (%s) are gone (or cannot be read here) and not recovered: the garbage collector deletes it again; recover them too", strings.Join(gone, ", "))}}, nil, nil
	}
	return nil, nil, nil, nil
}

// throughAPI is the way out of a refusal that holds only for the stored
// bytes (Verdict.ThroughAPI).
const throughAPI = "`regghost recover -o yaml` and `kubectl apply` write it through the API server instead"

// witness checks that a key an object rests on exists live (and is not
// being deleted), or is recovered before it.
func (j *judge) witness(ctx context.Context, key, what, wayOut string) (Verdict, error) {
	kv, err := j.Live.Get(ctx, key)
	if err != nil {
		return Verdict{}, fmt.Errorf("read %s: %w", key, err)
	}
	if kv == nil {
		if w := j.byKey[key]; w != nil && w.Action == Recover {
			if w.Meta != nil && w.Meta.Meta.DeletionTimestamp != nil {
				return refused("%s was being deleted in the source: it comes back terminating and the object would be deleted with it", what), nil
			}
			return Verdict{Needs: []Need{{Key: key, What: what}}}, nil
		}
		if w := j.byKey[key]; w != nil {
			return refused("%s does not exist and is not recovered (%s): the object would be a ghost", what, w.Detail), nil
		}
		return refused("%s does not exist: the object would be a ghost; %s", what, wayOut), nil
	}
	obj, err := j.Reader.Read(ctx, key, kv.Value)
	if err != nil {
		return refused("%s cannot be read (%v): whether it is being deleted cannot be told", what, err), nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return refused("%s cannot be read (%v): whether it is being deleted cannot be told", what, err), nil
	}
	if m.GetDeletionTimestamp() != nil {
		return refused("%s is being deleted: the object would go with it", what), nil
	}
	was, why, err := j.sourceUID(ctx, key)
	if err != nil {
		return Verdict{}, err
	}
	switch {
	case j.IntoRecreated:
	case why != "":
		return refused("%s in the source cannot be read (%s): whether it was created again since cannot be told; %s writes the object anyway", what, why, flagnames.IntoRecreated), nil
	case was != "" && was != string(m.GetUID()):
		return refused("%s was deleted and created again since the source (UID %s, now %s): the object would join one it never belonged to; %s writes it there anyway", what, was, m.GetUID(), flagnames.IntoRecreated), nil
	}
	return Verdict{Needs: []Need{{Key: key, What: what, CreateRevision: kv.CreateRevision}}}, nil
}

// sourceUID is the UID of key in the source: "" when the source lacks it;
// why says why it cannot be read there (decrypted with the source's
// decoders when encrypted).
func (j *judge) sourceUID(ctx context.Context, key string) (uid, why string, err error) {
	if j.Source == nil {
		return "", "", nil
	}
	kv, err := j.Source.Get(ctx, key)
	if err != nil {
		return "", "", fmt.Errorf("read %s in the source: %w", key, err)
	}
	if kv == nil {
		return "", "", nil
	}
	if o := j.byKey[key]; o != nil && o.Meta != nil {
		return string(o.Meta.Meta.UID), "", nil
	}
	k, err := etcdscan.ParseKey(j.Registry, key)
	if err != nil {
		return "", err.Error(), nil
	}
	o := readObject(ctx, kv, k, catalog.Release().ResourceFor(k.Prefix), j.Decoders)
	if o.Unreadable != "" {
		return "", o.Unreadable, nil
	}
	return string(o.Meta.Meta.UID), "", nil
}

// encryptedLive counts the live values under prefix that are encrypted.
func (j *judge) encryptedLive(ctx context.Context, prefix string) (int, error) {
	if _, _, err := j.uidHolder(ctx, prefix, ""); err != nil {
		return 0, err
	}
	return j.encrypted[prefix], nil
}

// uidHolder finds the live key under prefix holding uid, reading the
// prefix once.
func (j *judge) uidHolder(ctx context.Context, prefix, uid string) (string, int, error) {
	m, ok := j.uids[prefix]
	if !ok {
		m = map[string]string{}
		p := j.Registry + prefix + "/"
		err := j.Live.Range(ctx, p, etcdscan.PrefixEnd(p), false, func(kv *mvccpb.KeyValue) error {
			if d, err := decode.Meta(kv.Value); err == nil && d.Encryption != nil {
				j.encrypted[prefix]++
			}
			id, err := j.uidOf(ctx, kv)
			if err != nil {
				// A plaintext value that does not decode is no object to
				// kube-apiserver either; an encrypted one may be.
				if d, derr := decode.Meta(kv.Value); derr == nil && d.Encryption != nil {
					j.unread[prefix]++
				}
				return nil
			}
			m[id] = string(kv.Key)
			return nil
		})
		if err != nil {
			return "", 0, fmt.Errorf("read the live %s/: %w", prefix, err)
		}
		j.uids[prefix] = m
	}
	return m[uid], j.unread[prefix], nil
}

func (j *judge) uidOf(ctx context.Context, kv *mvccpb.KeyValue) (string, error) {
	if d, err := decode.Meta(kv.Value); err == nil && d.Encryption == nil {
		return string(d.Meta.UID), nil
	}
	obj, err := j.Reader.Read(ctx, string(kv.Key), kv.Value)
	if err != nil {
		return "", err
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", err
	}
	return string(m.GetUID()), nil
}

// customGroup is the group of a custom resource's storage prefix.
func customGroup(prefix string) (string, bool) {
	g, _, ok := strings.Cut(prefix, "/")
	if !ok || !strings.Contains(g, ".") || catalog.IsBuiltinGroup(g) {
		return "", false
	}
	return g, true
}

func nsName(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

// versionKnown says why the live CRD cannot read a custom resource stored
// at apiVersion ("" when it can, or when the CRD is recovered in this run).
func (j *judge) versionKnown(ctx context.Context, crdKey, apiVersion string) (string, error) {
	kv, err := j.Live.Get(ctx, crdKey)
	if err != nil || kv == nil {
		return "", err
	}
	obj, err := j.Reader.Read(ctx, crdKey, kv.Value)
	if err != nil {
		return fmt.Sprintf("the live CustomResourceDefinition cannot be read (%v): whether it still has version %s cannot be told", err, apiVersion), nil
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return "", nil
	}
	versions, _, _ := unstructured.NestedSlice(u, "spec", "versions")
	_, version, _ := strings.Cut(apiVersion, "/")
	var names []string
	for _, v := range versions {
		if m, ok := v.(map[string]any); ok {
			n, _ := m["name"].(string)
			if n == version {
				return "", nil
			}
			names = append(names, n)
		}
	}
	return fmt.Sprintf("it is stored as %s, a version the live CustomResourceDefinition no longer has (%s): kube-apiserver could not read it; recover it with -o yaml, convert it, and kubectl apply", apiVersion, strings.Join(names, ", ")), nil
}
