package dangling

import (
	_ "embed"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// PolicyBinding is one binding of kube-apiserver's bootstrap policy that
// names ServiceAccounts: exactly as the release writes it at its first
// start.
type PolicyBinding struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	RoleKind  string `json:"roleKind"`
	Role      string `json:"role"`
	// ServiceAccounts are its ServiceAccount subjects, "namespace/name".
	ServiceAccounts []string `json:"serviceAccounts"`
}

// Policy is the bootstrap policy's bindings by kube-apiserver release.
type Policy struct {
	Releases map[string][]PolicyBinding `json:"releases"`
}

// policyJSON is every tested release's policy, as its kube-apiserver wrote
// it (the e2e suite checks it; `make catalog` rewrites it).
//
//go:embed bootstrap_policy.json
var policyJSON []byte

var loadPolicy = sync.OnceValue(func() Policy {
	var p Policy
	if err := json.Unmarshal(policyJSON, &p); err != nil {
		panic("pkg/dangling/bootstrap_policy.json: " + err.Error())
	}
	if p.Releases == nil {
		p.Releases = map[string][]PolicyBinding{}
	}
	return p
})

// PolicyTable is a copy of the embedded table.
func PolicyTable() Policy {
	p := Policy{Releases: map[string][]PolicyBinding{}}
	for r, bs := range loadPolicy().Releases {
		p.Releases[r] = slices.Clone(bs)
	}
	return p
}

// policyFor is the bindings of the release serverVersion names (its major
// and minor: "v1.37.2" and "v1.37.0-gke.1" are v1.37) and of every older
// release in the table: kube-apiserver's reconciliation never deletes a
// binding a later release dropped, so an upgraded cluster keeps them. A
// version the table does not reach (newer than every release in it, none
// asked, or none stamped in) takes every release's.
func policyFor(serverVersion string) []PolicyBinding {
	p := loadPolicy()
	mine := majorMinor(serverVersion)
	known := false
	for r := range p.Releases {
		known = known || majorMinor(r) == mine
	}
	var all []PolicyBinding
	for r, bs := range p.Releases {
		if !known || !newerRelease(majorMinor(r), mine) {
			all = append(all, bs...)
		}
	}
	return all
}

// newerRelease says whether release a ("v1.37") is newer than b.
func newerRelease(a, b string) bool {
	minor := func(v string) int {
		_, m, _ := strings.Cut(strings.TrimPrefix(v, "v"), ".")
		n, _ := strconv.Atoi(m)
		return n
	}
	return minor(a) > minor(b)
}

// majorMinor is "v1.37" of "v1.37.2"; "" when v is not a release version.
func majorMinor(v string) string {
	v = strings.TrimPrefix(v, "v")
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 || parts[0] == "" || parts[1] == "" || strings.Trim(parts[0]+parts[1], "0123456789") != "" || parts[0] == "0" {
		return ""
	}
	return "v" + parts[0] + "." + parts[1]
}

// BindingRef is a binding as it stands in etcd: what PolicySubject
// compares with the table.
type BindingRef struct {
	Kind, Namespace, Name string
	RoleKind, Role        string
}

// PolicySubject reports whether ServiceAccount ns/name under binding b is
// one of kube-apiserver's own bootstrap policy for the release in use
// (serverVersion): the exact (binding, role, subject) of the table, the
// role named as the binding. Such a subject is missing by design (it
// exists only while its component runs that way, or never) and
// kube-apiserver puts it back at its next start. Anything else is judged
// as any binding: a subject added to a policy binding, a binding dressed
// as one (the label, the annotation, a system:controller: name) that the
// release never wrote, one bound to another role.
func PolicySubject(serverVersion string, b BindingRef, ns, name string) bool {
	if b.Role != b.Name {
		return false
	}
	for _, p := range policyFor(serverVersion) {
		if p.Kind == b.Kind && p.Namespace == b.Namespace && p.Name == b.Name && p.RoleKind == b.RoleKind && p.Role == b.Role &&
			slices.Contains(p.ServiceAccounts, ns+"/"+name) {
			return true
		}
	}
	return false
}
