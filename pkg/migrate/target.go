// Package migrate moves the objects of one resource to the storage version
// and the encryption key its resource is written with now, and proves it
// from etcd: the census reads from etcd what is stored where (the plan),
// Rewrite writes exactly the objects it names through the API server with a
// resourceVersion precondition (a no-op update: the API server encodes at the
// storage version and encrypts with the first key), and a census taken
// again afterwards is the proof. Only a proof with nothing left lets
// PruneStoredVersions narrow a CRD's status.storedVersions, and only a proof
// with no live object and no old revision under an old key says that key
// may leave the EncryptionConfiguration.
package migrate

import (
	"context"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/regghost/regghost/pkg/catalog"
	"github.com/regghost/regghost/pkg/decode"
	"github.com/regghost/regghost/pkg/decrypt"
	"github.com/regghost/regghost/pkg/etcdscan"
)

// Target is the resource a migration moves.
type Target struct {
	// Resource is the resource, such as widgets.example.com or secrets.
	Resource schema.GroupResource
	// Prefix is its storage prefix below the registry prefix.
	Prefix string
	// Version is the CRD's storage version, or the built-in resource's
	// version.
	Version string
	// Through is the version the rewrite reads and writes through when it
	// is not Version: a CRD may store at a version it does not serve
	// (served: false), and the API server then answers 404 for it. It is
	// the first served version the CRD lists; "" with Version served, or
	// with NotServed set.
	Through string
	// NotServed says the CRD serves no version: the API server can neither
	// read nor write its objects, so nothing can be rewritten.
	NotServed  bool
	Namespaced bool
	// CRD is the resource's CustomResourceDefinition as etcd holds it (nil
	// for a built-in resource); CRDRevision is the revision it was read at.
	CRD         *apiextensionsv1.CustomResourceDefinition
	CRDRevision int64
	// Builtin judges a built-in resource's objects (nil: they are counted,
	// not judged).
	Builtin *Builtin
	// Servers are the kube-apiservers asked, and those that could not be
	// (nil: none was asked, offline or without an API server).
	Servers *Servers
}

// GVR is the group, version and resource the rewrite goes through: a
// version the API server serves (the storage version when it is served).
func (t Target) GVR() schema.GroupVersionResource {
	if t.Through != "" {
		return t.Resource.WithVersion(t.Through)
	}
	return t.Resource.WithVersion(t.Version)
}

// StorageVersion is the version a custom resource is stored at ("" for a
// built-in resource, whose storage version is the API server's own).
func (t Target) StorageVersion() string {
	if t.CRD == nil {
		return ""
	}
	return t.Version
}

// crdKey is where etcd holds the CustomResourceDefinition name.
func crdKey(registry, name string) string {
	return registry + "apiextensions.k8s.io/customresourcedefinitions/" + name
}

// Resolve finds the resource named name (plural.group, or a built-in
// resource's plural) in etcd: a custom resource by its
// CustomResourceDefinition, a built-in one by this release's catalog.
func Resolve(ctx context.Context, store etcdscan.Store, registry string, dec *decrypt.Decrypter, name string) (Target, error) {
	if r, ok := catalog.CustomFromCRDName(name); ok && !isBuiltin(name) {
		kv, err := store.Get(ctx, crdKey(registry, name))
		if err != nil {
			return Target{}, fmt.Errorf("read CustomResourceDefinition %s: %w", name, err)
		}
		if kv == nil {
			return Target{}, fmt.Errorf("no CustomResourceDefinition %s in etcd (at revision %d), and no built-in resource of that name", name, store.Revision())
		}
		value := kv.Value
		if dec != nil {
			crdGR := schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}
			if value, _, err = dec.Open(ctx, string(kv.Key), crdGR, kv.Value); err != nil {
				return Target{}, fmt.Errorf("read CustomResourceDefinition %s: %w", name, err)
			}
		}
		crd, err := decode.CRD(value)
		if err != nil {
			return Target{}, fmt.Errorf("decode CustomResourceDefinition %s: %w", name, err)
		}
		t := Target{Resource: schema.GroupResource{Group: r.Group, Resource: r.Resource}, Prefix: r.Prefix(),
			Namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped, CRD: crd, CRDRevision: kv.ModRevision}
		served := ""
		for _, v := range crd.Spec.Versions {
			if v.Storage {
				t.Version = v.Name
			}
			if v.Served && served == "" {
				served = v.Name
			}
		}
		if t.Version == "" {
			return Target{}, fmt.Errorf("CustomResourceDefinition %s has no storage version", name)
		}
		for _, v := range crd.Spec.Versions {
			if v.Storage && !v.Served {
				t.Through, t.NotServed = served, served == ""
			}
		}
		return t, nil
	}
	for _, r := range catalog.Builtin() {
		if r.GroupResource() == name || (r.Group == "" && r.Resource+".core" == name) {
			return Target{Resource: schema.GroupResource{Group: r.Group, Resource: r.Resource}, Prefix: r.Prefix(),
				Version: r.Version, Namespaced: r.Namespaced}, nil
		}
	}
	return Target{}, fmt.Errorf("unknown resource %q: give plural.group as kubectl api-resources names it (widgets.example.com, secrets, deployments.apps)", name)
}

// isBuiltin reports whether name is a built-in resource's plural.group.
func isBuiltin(name string) bool {
	for _, r := range catalog.Builtin() {
		if r.GroupResource() == name {
			return true
		}
	}
	return false
}
