// Package recovery brings single objects back from an etcd snapshot file or
// an older revision of the live etcd: it selects them, judges each against
// the live cluster (never overwrite, never make a ghost, say what writing
// it sets off) and turns them into manifests. The writes themselves go
// through repair's guarded transactions.
package recovery

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/regghost/regghost/pkg/catalog"
	"github.com/regghost/regghost/pkg/decode"
	"github.com/regghost/regghost/pkg/decrypt"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/resolve"
)

// Source is where objects are recovered from: a snapshot file or the live
// etcd read at an older revision.
type Source interface {
	Revision() int64
	Range(ctx context.Context, start, end string, keysOnly bool, fn func(*mvccpb.KeyValue) error) error
	Get(ctx context.Context, key string) (*mvccpb.KeyValue, error)
}

// Selection chooses objects. Keys are exact keys or prefixes (ending in
// "/"); without keys every object under Registry is a candidate. The other
// fields narrow the candidates down; empty fields match everything.
type Selection struct {
	Registry string
	Keys     []string
	// Namespace keeps the objects of one namespace (cluster-scoped objects
	// are kept only when named by a key, a CRD also when named by Name).
	Namespace string
	// Resource is a resource ("secrets", "widgets.example.com") or a kind
	// ("Secret"), case-insensitive.
	Resource string
	Name     string
	Selector labels.Selector
	// WithNamespace adds the namespace object of each selected namespaced
	// object that the source holds, whatever the other filters say: they
	// choose the objects, and each brings its namespace.
	WithNamespace bool
}

// Complete fills in what recover's flags imply: the resource "crd" (or
// "crds") is customresourcedefinitions, and selector, when given, is a
// label selector (key=value,...).
func (s *Selection) Complete(selector string) error {
	switch strings.ToLower(s.Resource) {
	case "crd", "crds":
		s.Resource = "customresourcedefinitions"
	}
	if selector == "" {
		return nil
	}
	sel, err := labels.Parse(selector)
	if err != nil {
		return fmt.Errorf("--selector %q: %w", selector, err)
	}
	s.Selector = sel
	return nil
}

// Stage orders the writes: a namespace before its objects, a CRD before its
// custom resources.
type Stage int

// The stages, in write order.
const (
	StageNamespaces Stage = iota
	StageCRDs
	StageObjects
)

// Object is one selected object, as the source holds it.
type Object struct {
	Key string `json:"key"`
	// Value is the stored bytes (possibly encrypted), copied out of the source.
	Value          []byte             `json:"-"`
	ModRevision    int64              `json:"modRevision"`
	CreateRevision int64              `json:"createRevision"`
	Lease          int64              `json:"lease,omitempty"`
	Parsed         etcdscan.Key       `json:"-"`
	Resource       catalog.Resource   `json:"resource"`
	Stage          Stage              `json:"stage"`
	Obj            runtime.Object     `json:"-"`
	Meta           *decode.Object     `json:"-"`
	Encryption     *decode.Encryption `json:"encryption,omitempty"`
	// Unreadable says why the value could not be decoded here.
	Unreadable string `json:"unreadable,omitempty"`
	// Named says the object was asked for by name: chosen by its exact
	// key, or by Selection.Name. An object that comes with another (its
	// namespace, a CRD's custom resources) is not.
	Named bool `json:"-"`
	Verdict
}

// Decoders read source values: the cluster's encryption config first, then
// an older one (the snapshot's) when given.
type Decoders []*decrypt.Decrypter

const namespacesPrefix = "namespaces"

// Select reads the chosen objects from src, decoded with decs, ordered by
// stage and key. A selected CRD brings its custom resources (within the
// Namespace and Selector); WithNamespace brings the namespace of every
// chosen namespaced object, which the filters do not apply to.
func Select(ctx context.Context, src Source, sel Selection, decs Decoders) ([]*Object, error) {
	types, err := resolve.Load(ctx, src, sel.Registry, nil, nil)
	if err != nil {
		return nil, err
	}
	ranges := sel.Keys
	if len(ranges) == 0 {
		ranges = []string{sel.Registry}
	}
	byKey := map[string]*Object{}
	add := func(kv *mvccpb.KeyValue, named bool) error {
		key := string(kv.Key)
		if byKey[key] != nil {
			return nil
		}
		k, err := etcdscan.ParseKey(sel.Registry, key)
		if err != nil || catalog.IsInternal(k.Prefix) {
			if named && !strings.HasSuffix(key, "/") && err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
			return nil
		}
		res, _ := types.Resource(k.Prefix)
		o := readObject(ctx, kv, k, res, decs)
		if !sel.keep(o, named) {
			return nil
		}
		o.Named = named || sel.Name != ""
		byKey[key] = o
		return nil
	}
	for _, r := range ranges {
		if !strings.HasSuffix(r, "/") {
			kv, err := etcdscan.GetCopy(ctx, src, r)
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", r, err)
			}
			if kv == nil {
				return nil, fmt.Errorf("key %s is not in the source (revision %d)", r, src.Revision())
			}
			if err := add(kv, true); err != nil {
				return nil, err
			}
			continue
		}
		if err := src.Range(ctx, r, etcdscan.PrefixEnd(r), false, func(kv *mvccpb.KeyValue) error { return add(kv, false) }); err != nil {
			return nil, fmt.Errorf("read %s: %w", r, err)
		}
	}
	// A CRD brings its custom resources.
	for _, o := range sortedObjects(byKey) {
		if o.Stage != StageCRDs {
			continue
		}
		p := sel.Registry + crdPrefix(o) + "/"
		err := src.Range(ctx, p, etcdscan.PrefixEnd(p), false, func(kv *mvccpb.KeyValue) error {
			key := string(kv.Key)
			if byKey[key] != nil {
				return nil
			}
			k, err := etcdscan.ParseKey(sel.Registry, key)
			if err != nil {
				return nil
			}
			res, _ := types.Resource(k.Prefix)
			c := readObject(ctx, kv, k, res, decs)
			if (sel.Namespace == "" || k.Namespace == sel.Namespace) && sel.matchLabels(c) {
				byKey[key] = c
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("read the custom resources of %s: %w", o.Key, err)
		}
	}
	// The namespace comes with its objects: -l, --name and --resource chose
	// the objects, not their namespace (a namespace rarely carries the
	// labels of what it holds, and never its name or kind).
	if sel.WithNamespace {
		for _, o := range sortedObjects(byKey) {
			if o.Parsed.Namespace == "" {
				continue
			}
			key := sel.Registry + namespacesPrefix + "/" + o.Parsed.Namespace
			if byKey[key] != nil {
				continue
			}
			kv, err := etcdscan.GetCopy(ctx, src, key)
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", key, err)
			}
			if kv == nil {
				continue
			}
			k, err := etcdscan.ParseKey(sel.Registry, key)
			if err != nil {
				return nil, fmt.Errorf("the namespace of %s: %w", o.Key, err)
			}
			res, _ := types.Resource(k.Prefix)
			byKey[key] = readObject(ctx, kv, k, res, decs)
		}
	}
	return sortedObjects(byKey), nil
}

// crdPrefix is the storage prefix of a CRD's custom resources, from its
// name (<plural>.<group>).
func crdPrefix(o *Object) string {
	plural, group, _ := strings.Cut(o.Parsed.Name, ".")
	return group + "/" + plural
}

func sortedObjects(m map[string]*Object) []*Object {
	out := make([]*Object, 0, len(m))
	for _, o := range m {
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Stage != out[j].Stage {
			return out[i].Stage < out[j].Stage
		}
		return out[i].Key < out[j].Key
	})
	return out
}

// decode decodes o's value, decrypting it with the first decrypter that can.
// readObject is the object stored in kv (its value copied out of the
// source), decoded.
func readObject(ctx context.Context, kv *mvccpb.KeyValue, k etcdscan.Key, res catalog.Resource, decs Decoders) *Object {
	o := &Object{Key: string(kv.Key), Value: append([]byte(nil), kv.Value...), ModRevision: kv.ModRevision, CreateRevision: kv.CreateRevision, Lease: kv.Lease, Parsed: k, Resource: res}
	o.decode(ctx, decs)
	return o
}

func (o *Object) decode(ctx context.Context, decs Decoders) {
	switch {
	case o.Parsed.Prefix == namespacesPrefix:
		o.Stage = StageNamespaces
	case o.Parsed.Prefix == strings.TrimSuffix(resolve.CRDPrefix, "/"):
		o.Stage = StageCRDs
	default:
		o.Stage = StageObjects
	}
	obj, meta, err := decode.Typed(o.Value)
	if meta != nil && meta.Encryption != nil {
		o.Encryption = meta.Encryption
	}
	if err == nil {
		o.Obj, o.Meta = obj, meta
		return
	}
	why := []string{err.Error()}
	if o.Encryption != nil {
		gr := schema.GroupResource{Group: o.Resource.Group, Resource: o.Resource.Resource}
		if len(decs) == 0 {
			why = append(why, "no --encryption-provider-config")
		}
		for _, d := range decs {
			plain, derr := d.Decrypt(ctx, o.Key, gr, o.Value)
			if derr != nil {
				why = append(why, derr.Error())
				continue
			}
			if obj, meta, err = decode.Typed(plain); err == nil {
				o.Obj, o.Meta = obj, meta
				return
			}
			why = append(why, "decrypted: "+err.Error())
		}
	}
	o.Unreadable = strings.Join(why, "; ")
}

// keep applies the selection's filters. An object whose labels cannot be
// read is kept when a selector is given, so that its refusal is seen
// rather than the object silently left out. A CRD asked for by its key or
// by name is kept whatever the Namespace and Selector say: they choose its
// custom resources (a CRD carries neither their namespace nor their
// labels).
func (s Selection) keep(o *Object, named bool) bool {
	if s.Name != "" && o.Parsed.Name != s.Name {
		return false
	}
	if s.Resource != "" && !matchesResource(o.Resource, o.Parsed.Prefix, s.Resource) {
		return false
	}
	if o.Stage == StageCRDs && (named || s.Name != "") {
		return true
	}
	if s.Namespace != "" && o.Parsed.Namespace != s.Namespace && !(named && o.Parsed.Namespace == "") {
		return false
	}
	return s.matchLabels(o)
}

func (s Selection) matchLabels(o *Object) bool {
	if s.Selector == nil || s.Selector.Empty() {
		return true
	}
	if o.Meta == nil {
		return true
	}
	return s.Selector.Matches(labels.Set(o.Meta.Meta.Labels))
}

// matchesResource matches "secrets", "secret", "Secret", "widgets.example.com"
// or the storage prefix.
func matchesResource(r catalog.Resource, prefix, want string) bool {
	w := strings.ToLower(want)
	for _, c := range []string{r.Resource, strings.TrimSuffix(r.Resource, "s"), strings.ToLower(r.Kind), r.GroupResource(), prefix} {
		if c != "" && c == w {
			return true
		}
	}
	if r.Kind != "" && r.Group != "" && w == strings.ToLower(r.Kind)+"."+r.Group {
		return true
	}
	return false
}
