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

// PolicyPrincipals is one binding of kube-apiserver's bootstrap policy that
// names Users or Groups (the control plane's own identities, such as
// system:kube-scheduler or system:masters), with those subjects: exactly as
// the release writes it.
type PolicyPrincipals struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	RoleKind  string `json:"roleKind"`
	Role      string `json:"role"`
	// Users and Groups are its User and Group subjects, by name.
	Users  []string `json:"users,omitempty"`
	Groups []string `json:"groups,omitempty"`
}

// Policy is the bootstrap policy's bindings by kube-apiserver release.
type Policy struct {
	// Releases are the bindings that name ServiceAccounts.
	Releases map[string][]PolicyBinding `json:"releases"`
	// Principals are the bindings that name Users or Groups.
	Principals map[string][]PolicyPrincipals `json:"principals,omitempty"`
}

// policyJSON is every tested release's policy. Its releases are as the
// release's kube-apiserver wrote them (the e2e suite checks them; `make
// catalog` rewrites them); its principals are as the release's source
// writes them (plugin/pkg/auth/authorizer/rbac/bootstrappolicy of
// k8s.io/kubernetes at that tag, every feature gate on: ClusterRoleBindings
// and NamespaceRoleBindings, the only ones that name a User or a Group), and
// `make catalog` keeps them as they are.
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
	if p.Principals == nil {
		p.Principals = map[string][]PolicyPrincipals{}
	}
	return p
})

// PolicyTable is a copy of the embedded table.
func PolicyTable() Policy {
	p := Policy{Releases: map[string][]PolicyBinding{}, Principals: map[string][]PolicyPrincipals{}}
	for r, bs := range loadPolicy().Releases {
		p.Releases[r] = slices.Clone(bs)
	}
	for r, bs := range loadPolicy().Principals {
		p.Principals[r] = slices.Clone(bs)
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
	return upTo(loadPolicy().Releases, serverVersion)
}

// principalsFor is policyFor for the bindings that name Users or Groups.
func principalsFor(serverVersion string) []PolicyPrincipals {
	return upTo(loadPolicy().Principals, serverVersion)
}

// upTo is the entries of the release serverVersion names and of every
// older release in byRelease; every release's when it names none of them.
func upTo[T any](byRelease map[string][]T, serverVersion string) []T {
	mine := majorMinor(serverVersion)
	known := false
	for r := range byRelease {
		known = known || majorMinor(r) == mine
	}
	var all []T
	for r, bs := range byRelease {
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

// PolicyPrincipal reports whether the User or Group (kind "User" or
// "Group") name under binding b is one of kube-apiserver's own bootstrap
// policy for the release in use (serverVersion): the exact (binding, role,
// subject) of the table, as PolicySubject for a ServiceAccount
// (system:kube-scheduler on system::leader-locking-kube-scheduler,
// system:masters on cluster-admin). Anything else (a User or Group added to
// a policy binding, the policy's User on another of its bindings, a binding
// dressed as one) is not the policy's, and a binding that holds it is not
// the policy's binding as written.
func PolicyPrincipal(serverVersion string, b BindingRef, kind, name string) bool {
	for _, p := range principalsFor(serverVersion) {
		if p.Kind != b.Kind || p.Namespace != b.Namespace || p.Name != b.Name || p.RoleKind != b.RoleKind || p.Role != b.Role {
			continue
		}
		switch kind {
		case "User":
			if slices.Contains(p.Users, name) {
				return true
			}
		case "Group":
			if slices.Contains(p.Groups, name) {
				return true
			}
		}
	}
	return false
}
