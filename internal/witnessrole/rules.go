// Package witnessrole derives the RBAC rules of serve's API server witness
// from the built-in resource catalog, and writes them where the Helm chart
// and the static pod's rbac.yaml take them ('make docs').
//
// The witness only GETs objects by name: a suspected ghost, its namespace or
// CRD, kube-system, what a dangling reference starts from and points at.
// Its ClusterRole names each resource. It never says "*": RBAC matches a
// wildcard resource against subresources too, and GET on nodes/proxy,
// pods/exec, pods/attach or services/proxy reaches a kubelet or a container
// (as good as cluster-admin), GET on pods/log reads what workloads print.
package witnessrole

import (
	"sort"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/regghost/regghost/pkg/catalog"
)

// neverStored are the groups whose resources are requests answered at
// once (reviews), never objects in etcd: the witness has nothing to GET.
var neverStored = map[string]bool{
	"authentication.k8s.io": true,
	"authorization.k8s.io":  true,
}

// neverStoredCore are core resources that only exist as a POST (a Pod's
// binding): nothing to GET.
var neverStoredCore = map[string]bool{"bindings": true}

// Rules returns the witness's ClusterRole rules: discovery, the list of
// CustomResourceDefinitions, and get on every built-in resource that is
// stored, one rule per API group, by name.
func Rules() []rbacv1.PolicyRule {
	rules := []rbacv1.PolicyRule{
		{NonResourceURLs: []string{"/api", "/api/*", "/apis", "/apis/*", "/version"}, Verbs: []string{"get"}},
		{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"list"}},
	}
	byGroup := map[string]map[string]bool{}
	for _, r := range catalog.Builtin() {
		if neverStored[r.Group] || (r.Group == "" && neverStoredCore[r.Resource]) {
			continue
		}
		if byGroup[r.Group] == nil {
			byGroup[r.Group] = map[string]bool{}
		}
		byGroup[r.Group][r.Resource] = true
	}
	groups := make([]string, 0, len(byGroup))
	for g := range byGroup {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	for _, g := range groups {
		names := make([]string, 0, len(byGroup[g]))
		for n := range byGroup[g] {
			names = append(names, n)
		}
		sort.Strings(names)
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{g}, Resources: names, Verbs: []string{"get"}})
	}
	return rules
}
