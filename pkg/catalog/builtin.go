package catalog

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"sync"
)

// builtinJSON lists every resource the kube-apiserver release the e2e suite
// builds can serve: the discovery of one started with every group/version
// and feature gate on, each resource marked offByDefault when a stock
// kube-apiserver does not serve it. `make catalog` writes it and the e2e
// suite checks it against both servers. It is the release's witness of what
// can live in etcd when the API server cannot be asked.
//
//go:embed builtin.json
var builtinJSON []byte

// release is the decoded builtin.json.
type release struct {
	// KubeAPIServer is the version the catalog was generated from.
	KubeAPIServer string     `json:"kubeAPIServer"`
	Resources     []Resource `json:"resources"`
}

var loadRelease = sync.OnceValue(func() release {
	var r release
	if err := json.Unmarshal(builtinJSON, &r); err != nil || r.KubeAPIServer == "" || len(r.Resources) == 0 {
		panic(fmt.Sprintf("catalog: embedded builtin.json is invalid: %v", err))
	}
	return r
})

// ReleaseVersion is the kube-apiserver version the built-in catalog comes from.
func ReleaseVersion() string { return loadRelease().KubeAPIServer }

// Builtin returns every resource kube-apiserver ReleaseVersion can serve,
// enabled by default or not (without CRDs and aggregated APIs).
func Builtin() []Resource {
	return append([]Resource(nil), loadRelease().Resources...)
}

// Release is the catalog of Builtin resources.
func Release() *Catalog { return releaseCatalog() }

var releaseCatalog = sync.OnceValue(func() *Catalog {
	return New("every resource kube-apiserver "+ReleaseVersion()+" can serve", Builtin(), nil)
})

// CustomFromCRDName returns the resource a CustomResourceDefinition named
// "<plural>.<group>" defines. Kind and scope are unknown from the name alone.
func CustomFromCRDName(name string) (Resource, bool) {
	for i := 0; i < len(name); i++ {
		if name[i] == '.' {
			if i == 0 || i == len(name)-1 {
				return Resource{}, false
			}
			return Resource{Group: name[i+1:], Resource: name[:i], Custom: true}, true
		}
	}
	return Resource{}, false
}

// IsBuiltinGroup reports whether kube-apiserver itself serves group (as
// opposed to a CRD or an aggregated API server).
func IsBuiltinGroup(group string) bool {
	return Release().HasGroup(group)
}
