// Package resolve answers one question for every part of regghost: which API
// resource is stored under a storage prefix (and which one an owner
// reference's group and kind name). It asks, in this order, the API server's
// discovery, the CustomResourceDefinition keys in etcd and the release
// catalog of what kube-apiserver compiles in. scan, impact and unstick all
// use it, so an object they cannot read is named the same way by each.
package resolve

import (
	"context"
	"fmt"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/regghost/regghost/pkg/catalog"
	"github.com/regghost/regghost/pkg/decode"
)

// Source says which witness named a resource.
type Source string

// The sources, in the order they are asked.
const (
	// Discovery: the API server serves it now.
	Discovery Source = "discovery"
	// CRD: a CustomResourceDefinition key in etcd defines it.
	CRD Source = "crd"
	// Release: kube-apiserver compiles it in.
	Release Source = "release"
	// Guess: nothing knows the prefix; the resource is named after it
	// ("<group>/<plural>" or a core resource), without kind or version.
	Guess Source = "guess"
)

// Ranger reads keys in order (etcdscan.Store has it).
type Ranger interface {
	Range(ctx context.Context, start, end string, keysOnly bool, fn func(*mvccpb.KeyValue) error) error
}

// Decrypter decrypts a value encrypted at rest (*decrypt.Decrypter).
type Decrypter interface {
	Decrypt(ctx context.Context, key string, gr schema.GroupResource, data []byte) ([]byte, error)
}

// StoredCRD is a CustomResourceDefinition key found in etcd.
type StoredCRD struct {
	// Name is the CRD's name, "<plural>.<group>".
	Name string
	// Key is its etcd key.
	Key string
	// Object is nil when the value could not be read (encrypted with keys
	// regghost lacks, or damaged): the key alone still proves the type
	// exists, but its kind and scope are unknown.
	Object *apiextensionsv1.CustomResourceDefinition
	// Why says why Object is nil.
	Why string
}

// Resource is the resource the CRD defines; kind, scope and storage
// version are set only when it could be read.
func (c StoredCRD) Resource() catalog.Resource {
	r, _ := catalog.CustomFromCRDName(c.Name)
	if c.Object == nil {
		return r
	}
	s := c.Object.Spec
	r.Group, r.Resource, r.Kind = s.Group, s.Names.Plural, s.Names.Kind
	r.Namespaced = s.Scope == apiextensionsv1.NamespaceScoped
	for _, v := range s.Versions {
		if v.Storage {
			r.Version = v.Name
		}
	}
	return r
}

// Resolver holds the three witnesses of what is stored where.
type Resolver struct {
	// Served is the API server's discovery; nil when it was not asked.
	Served *catalog.Catalog
	// Release is what kube-apiserver compiles in.
	Release *catalog.Catalog
	// CRDs are the CRD keys in etcd, by the storage prefix they define.
	CRDs map[string]StoredCRD
	// Aggregated maps API groups served by aggregated API servers
	// (APIService keys with a service) to a sentence saying so.
	Aggregated map[string]string
}

// CRDPrefix is where CustomResourceDefinitions are stored, below the
// registry prefix.
const CRDPrefix = "apiextensions.k8s.io/customresourcedefinitions/"

// APIServicePrefix is where APIServices are stored, below the registry prefix.
const APIServicePrefix = "apiregistration.k8s.io/apiservices/"

// Load reads the CRD and APIService keys under registry. served may be nil
// (the API server is not asked), and so may dec (encrypted CRDs are then
// known by their key alone).
func Load(ctx context.Context, store Ranger, registry string, served *catalog.Catalog, dec Decrypter) (*Resolver, error) {
	r := &Resolver{Served: served, Release: catalog.Release(), CRDs: map[string]StoredCRD{}, Aggregated: map[string]string{}}
	start := registry + CRDPrefix
	err := store.Range(ctx, start, prefixEnd(start), false, func(kv *mvccpb.KeyValue) error {
		name := string(kv.Key[len(start):])
		res, ok := catalog.CustomFromCRDName(name)
		if !ok {
			return nil
		}
		c := StoredCRD{Name: name, Key: string(kv.Key)}
		c.Object, c.Why = readCRD(ctx, dec, c.Key, kv.Value)
		if c.Object != nil {
			res = catalog.Resource{Group: c.Object.Spec.Group, Resource: c.Object.Spec.Names.Plural, Custom: true}
		}
		r.CRDs[res.Prefix()] = c
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read CustomResourceDefinitions: %w", err)
	}
	start = registry + APIServicePrefix
	err = store.Range(ctx, start, prefixEnd(start), false, func(kv *mvccpb.KeyValue) error {
		name := string(kv.Key[len(start):])
		as, err := decode.APIService(kv.Value)
		if err != nil {
			// Whose group it is cannot be told: it is left alone.
			if _, group, ok := strings.Cut(name, "."); ok {
				r.Aggregated[group] = fmt.Sprintf("APIService %s cannot be read here (%v)", name, err)
			}
			return nil
		}
		if as.Spec.Service == nil || as.Spec.Group == "" {
			return nil
		}
		r.Aggregated[as.Spec.Group] = fmt.Sprintf("APIService %s is served by service %s/%s", as.Name, as.Spec.Service.Namespace, as.Spec.Service.Name)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read APIServices: %w", err)
	}
	return r, nil
}

var crdGroupResource = schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}

// readCRD decodes a stored CRD, decrypting it first when it is encrypted
// and dec can.
func readCRD(ctx context.Context, dec Decrypter, key string, value []byte) (*apiextensionsv1.CustomResourceDefinition, string) {
	crd, err := decode.CRD(value)
	if err == nil {
		return crd, ""
	}
	if dec == nil {
		return nil, err.Error()
	}
	plain, derr := dec.Decrypt(ctx, key, crdGroupResource, value)
	if derr != nil {
		return nil, fmt.Sprintf("%v; %v", err, derr)
	}
	if crd, err = decode.CRD(plain); err != nil {
		return nil, err.Error()
	}
	return crd, ""
}

// Resources lists every resource stored under prefix and who named them:
// discovery, then a CRD key, then the release catalog. None is returned
// (and Guess) when nothing knows the prefix.
func (r *Resolver) Resources(prefix string) ([]catalog.Resource, Source) {
	if r.Served != nil {
		if rs, ok := r.Served.Lookup(prefix); ok {
			return rs, Discovery
		}
	}
	if c, ok := r.CRDs[prefix]; ok {
		return []catalog.Resource{c.Resource()}, CRD
	}
	if rs, ok := r.Release.Lookup(prefix); ok {
		return rs, Release
	}
	return nil, Guess
}

// Resource is the resource stored under prefix, as Resources finds it;
// when nothing knows the prefix it is named after the prefix, with no kind
// and no version.
func (r *Resolver) Resource(prefix string) (catalog.Resource, Source) {
	if rs, src := r.Resources(prefix); len(rs) > 0 {
		return rs[0], src
	}
	return r.Release.ResourceFor(prefix), Guess
}

// ForKind finds the resource of a group and kind (an owner reference's):
// from discovery, the release catalog, or the CRDs in etcd.
func (r *Resolver) ForKind(group, kind string) (catalog.Resource, bool) {
	if r.Served != nil {
		if res, ok := r.Served.ForKind(group, kind); ok {
			return res, true
		}
	}
	if res, ok := r.Release.ForKind(group, kind); ok {
		return res, true
	}
	for _, c := range r.CRDs {
		if res := c.Resource(); res.Group == group && res.Kind == kind {
			return res, true
		}
	}
	return catalog.Resource{}, false
}

// GroupResource is the group and resource stored under prefix, which picks
// the encryption provider of its values as kube-apiserver does.
func (r *Resolver) GroupResource(prefix string) schema.GroupResource {
	res, _ := r.Resource(prefix)
	return schema.GroupResource{Group: res.Group, Resource: res.Resource}
}

// prefixEnd is the end of the range holding every key that starts with p.
func prefixEnd(p string) string {
	b := []byte(p)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1])
		}
	}
	return "\x00"
}
