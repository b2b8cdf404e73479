// Package catalog knows which API resources a cluster serves and where
// kube-apiserver stores each of them in etcd.
package catalog

import "strings"

// specialPrefixes are the storage prefixes compiled into kube-apiserver that
// differ from the resource name (SpecialDefaultResourcePrefixes in
// k8s.io/kubernetes/pkg/kubeapiserver/default_storage_factory_builder.go).
// The e2e suite checks this table against a real kube-apiserver's keys.
var specialPrefixes = map[[2]string]string{
	{"", "replicationcontrollers"}:                        "controllers",
	{"", "endpoints"}:                                     "services/endpoints",
	{"", "nodes"}:                                         "minions",
	{"", "services"}:                                      "services/specs",
	{"extensions", "ingresses"}:                           "ingress",
	{"networking.k8s.io", "ingresses"}:                    "ingress",
	{"policy", "podsecuritypolicies"}:                     "podsecuritypolicy",
	{"extensions", "podsecuritypolicies"}:                 "podsecuritypolicy",
	{"networking.k8s.io", "ingressclasses"}:               "ingressclasses",
	{"apiextensions.k8s.io", "customresourcedefinitions"}: "apiextensions.k8s.io/customresourcedefinitions",
	{"apiregistration.k8s.io", "apiservices"}:             "apiregistration.k8s.io/apiservices",
}

// nestedTop are first path segments that hold further prefixes below them.
var nestedTop = map[string]bool{"services": true, "ranges": true}

// internalPrefixes hold kube-apiserver bookkeeping, not API objects: the
// service IP and node port allocators and the endpoint lease reconcilers
// (pkg/controlplane/instance.go and pkg/controlplane/apiserver/peer.go), and
// the health key kine (k3s's datastore) writes under the registry prefix
// (HealthKey in github.com/k3s-io/kine pkg/server/types.go).
var internalPrefixes = map[string]bool{
	"health":                  true,
	"ranges/serviceips":       true,
	"ranges/servicenodeports": true,
	"masterleases":            true,
	"peerserverleases":        true,
}

// StoragePrefix returns the etcd prefix (below the registry prefix, without
// slashes) that kube-apiserver uses for a resource. Custom resources live
// under "<group>/<plural>"; built-in resources under their resource name
// unless compiled-in otherwise.
func StoragePrefix(group, resource string, custom bool) string {
	if p, ok := specialPrefixes[[2]string{group, resource}]; ok {
		return p
	}
	if custom {
		return group + "/" + resource
	}
	return resource
}

// PrefixSegments returns how many leading path segments of rest (a key with
// the registry prefix removed) form its storage prefix. Groups of custom
// resources always contain a dot (CRD validation requires it) and no built-in
// resource name does, so a dotted first segment means "<group>/<plural>".
func PrefixSegments(first string) int {
	if strings.Contains(first, ".") || nestedTop[first] {
		return 2
	}
	return 1
}

// IsInternal reports whether a storage prefix holds kube-apiserver bookkeeping
// rather than API objects.
func IsInternal(prefix string) bool { return internalPrefixes[prefix] }

// GroupOfPrefix returns the API group a dotted storage prefix
// ("<group>/<plural>") belongs to, and false for built-in, undotted prefixes.
func GroupOfPrefix(prefix string) (string, bool) {
	group, _, ok := strings.Cut(prefix, "/")
	if !ok || !strings.Contains(group, ".") {
		return "", false
	}
	return group, true
}
