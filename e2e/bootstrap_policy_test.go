package e2e

import (
	"context"
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/regghost/regghost/pkg/dangling"
)

// policyFile is pkg/dangling's table of the bootstrap policy's bindings.
const policyFile = "../pkg/dangling/bootstrap_policy.json"

// releaseInUse is the kube-apiserver release the clusters of this test
// run: one of the matrix's older releases, or the tools module's.
func releaseInUse(t *testing.T) string {
	t.Helper()
	api := binsFor(t).kubeAPIServer
	for _, r := range []kubeRelease{kube134, kube136} {
		if _, built := releaseBins.Load(r.dir); !built {
			continue
		}
		if paths, err := releasePaths(r); err == nil && paths[0] == api {
			return r.version
		}
	}
	out, err := goCmd("tools/kube-apiserver", "list", "-m", "-f", "{{.Version}}", "k8s.io/kubernetes")
	mustNoErr(t, "kubernetes version", err)
	return strings.TrimSpace(out)
}

// TestBootstrapPolicyTable checks pkg/dangling's table of kube-apiserver's
// bootstrap policy (every binding labelled rbac-defaults that names a
// ServiceAccount, with its role and those subjects) against what the
// release's kube-apiserver writes at its first start. Only those exact
// triples are dangling by design; a binding dressed the same way that is
// not in the table is judged as any. REGGHOST_UPDATE_CATALOG=1 (make
// catalog) rewrites the release's entry instead.
func TestBootstrapPolicyTable(t *testing.T) {
	parallel(t)
	// Every API and feature gate on: the policy a release can write (its
	// feature-gated controllers' bindings included), not only its defaults.
	c := startCluster(t, clusterOptions{unseeded: true, apiserverArgs: allAPIs})
	ctx := context.Background()
	selector := metav1.ListOptions{LabelSelector: dangling.BootstrappingLabel + "=" + dangling.BootstrappingRBACDefaults}
	var got []dangling.PolicyBinding
	var principals []dangling.PolicyPrincipals
	crbs, err := c.kube.RbacV1().ClusterRoleBindings().List(ctx, selector)
	mustNoErr(t, "list ClusterRoleBindings", err)
	for _, b := range crbs.Items {
		got = appendPolicy(got, "ClusterRoleBinding", "", b.Name, b.RoleRef.Kind, b.RoleRef.Name, b.Subjects)
		principals = appendPrincipals(principals, "ClusterRoleBinding", "", b.Name, b.RoleRef.Kind, b.RoleRef.Name, b.Subjects)
	}
	rbs, err := c.kube.RbacV1().RoleBindings("").List(ctx, selector)
	mustNoErr(t, "list RoleBindings", err)
	for _, b := range rbs.Items {
		got = appendPolicy(got, "RoleBinding", b.Namespace, b.Name, b.RoleRef.Kind, b.RoleRef.Name, b.Subjects)
		principals = appendPrincipals(principals, "RoleBinding", b.Namespace, b.Name, b.RoleRef.Kind, b.RoleRef.Name, b.Subjects)
	}
	slices.SortFunc(got, func(a, b dangling.PolicyBinding) int {
		return strings.Compare(a.Kind+"/"+a.Namespace+"/"+a.Name, b.Kind+"/"+b.Namespace+"/"+b.Name)
	})
	slices.SortFunc(principals, func(a, b dangling.PolicyPrincipals) int {
		return strings.Compare(a.Kind+"/"+a.Namespace+"/"+a.Name, b.Kind+"/"+b.Namespace+"/"+b.Name)
	})
	if len(got) < 20 {
		t.Fatalf("kube-apiserver wrote %d bootstrap bindings naming a ServiceAccount: RBAC is off?", len(got))
	}
	release := releaseInUse(t)
	if os.Getenv("REGGHOST_UPDATE_CATALOG") == "1" {
		// The file as it is now (each release's run adds its own).
		var table dangling.Policy
		raw, err := os.ReadFile(policyFile)
		mustNoErr(t, "read "+policyFile, err)
		mustNoErr(t, "decode "+policyFile, json.Unmarshal(raw, &table))
		if table.Releases == nil {
			table.Releases = map[string][]dangling.PolicyBinding{}
		}
		table.Releases[release] = got
		if table.Principals == nil {
			table.Principals = map[string][]dangling.PolicyPrincipals{}
		}
		table.Principals[release] = principals
		b, err := json.MarshalIndent(table, "", "  ")
		mustNoErr(t, "encode", err)
		mustNoErr(t, "write", os.WriteFile(policyFile, append(b, '\n'), 0o644))
		return
	}
	if want := dangling.PolicyTable().Releases[release]; !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		t.Errorf("%s differs from kube-apiserver %s's bootstrap policy; run `make catalog`:\n%s", policyFile, release, g)
	}
	// The Users and Groups the policy names: a wrong entry would hide a
	// grant (or report one that is by design).
	if want := dangling.PolicyTable().Principals[release]; !reflect.DeepEqual(principals, want) {
		g, _ := json.Marshal(principals)
		t.Errorf("%s's principals differ from kube-apiserver %s's bootstrap policy; run `make catalog`:\n%s", policyFile, release, g)
	}
}

// appendPrincipals adds a binding whose subjects name Users or Groups.
func appendPrincipals(out []dangling.PolicyPrincipals, kind, ns, name, roleKind, role string, subjects []rbacv1.Subject) []dangling.PolicyPrincipals {
	b := dangling.PolicyPrincipals{Kind: kind, Namespace: ns, Name: name, RoleKind: roleKind, Role: role}
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.UserKind:
			b.Users = append(b.Users, s.Name)
		case rbacv1.GroupKind:
			b.Groups = append(b.Groups, s.Name)
		}
	}
	if len(b.Users)+len(b.Groups) == 0 {
		return out
	}
	slices.Sort(b.Users)
	slices.Sort(b.Groups)
	return append(out, b)
}

// appendPolicy adds a binding whose subjects name ServiceAccounts.
func appendPolicy(out []dangling.PolicyBinding, kind, ns, name, roleKind, role string, subjects []rbacv1.Subject) []dangling.PolicyBinding {
	b := dangling.PolicyBinding{Kind: kind, Namespace: ns, Name: name, RoleKind: roleKind, Role: role}
	for _, s := range subjects {
		if s.Kind == "ServiceAccount" {
			b.ServiceAccounts = append(b.ServiceAccounts, s.Namespace+"/"+s.Name)
		}
	}
	if len(b.ServiceAccounts) == 0 {
		return out
	}
	slices.Sort(b.ServiceAccounts)
	return append(out, b)
}
