package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDanglingActsOnlyOnWhatItShowed: dangling's plan deletes a
// ClusterRoleBinding whose only subject, a ServiceAccount, went with its
// force-deleted namespace. While the question waits, the account is
// created again: the "yes" given to the plan no longer holds, and the
// binding, which grants the new account, is left alone.
func TestDanglingActsOnlyOnWhatItShowed(t *testing.T) {
	parallel(t)
	c := startCluster(t, clusterOptions{})
	ctx := context.Background()
	_, err := c.kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "pod-reader"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}}}}, metav1.CreateOptions{})
	mustNoErr(t, "create ClusterRole", err)
	c.createNamespace(t, "ci")
	account := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "builder", Namespace: "ci"}}
	_, err = c.kube.CoreV1().ServiceAccounts("ci").Create(ctx, account, metav1.CreateOptions{})
	mustNoErr(t, "create ServiceAccount", err)
	_, err = c.kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "builder-reads"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "pod-reader"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "ci", Name: "builder"}}}, metav1.CreateOptions{})
	mustNoErr(t, "create ClusterRoleBinding", err)
	const crbKey = "/registry/clusterrolebindings/builder-reads"
	c.forceDelete(t, "/registry/serviceaccounts/ci/builder")
	c.forceDelete(t, "/registry/namespaces/ci")
	wasValue := c.value(t, crbKey)

	root := filepath.Join(t.TempDir(), "backups")
	run := onTerminalInteractive(t, append([]string{"dangling", "--confirm", "--backup-dir", root, "--kubeconfig", c.kubeconfig}, c.etcdArgs()...)...)
	plan := run.question(t)
	if !strings.Contains(plan, "builder-reads") || !strings.Contains(plan, "Fix 1 object") {
		t.Fatalf("the plan should delete the binding:\n%s", plan)
	}
	// The account comes back while the question waits.
	c.createNamespace(t, "ci")
	_, err = c.kube.CoreV1().ServiceAccounts("ci").Create(ctx, account, metav1.CreateOptions{})
	mustNoErr(t, "create the ServiceAccount again", err)
	before := c.state(t)
	run.answer(t, "yes")
	rest, code := run.wait(t)
	if code == 0 || !strings.Contains(rest, "target-not-gone") {
		t.Errorf("dangling after the account came back: exit %d, want the fix left alone (target-not-gone):\n%s", code, rest)
	}
	c.assertUnchanged(t, "a fix whose target came back", before)
	if string(c.value(t, crbKey)) != string(wasValue) {
		t.Error("the binding changed")
	}
}

// TestRecoverActsOnlyOnWhatItShowed: recover's plan writes namespace shop
// back with its ConfigMap from a snapshot. While the question waits, the
// namespace and a ConfigMap of that name are created through the API
// server: the plan the operator confirmed no longer holds, and nothing is
// written (no object is overwritten, no namespace written over the new one).
func TestRecoverActsOnlyOnWhatItShowed(t *testing.T) {
	parallel(t)
	c := startCluster(t, clusterOptions{})
	c.createNamespace(t, "shop")
	c.createConfigMap(t, "shop", "settings")
	snap := filepath.Join(t.TempDir(), "before.db")
	if out, errOut, code := c.regghost(t, "", "snapshot", "save", snap); code != 0 {
		t.Fatalf("snapshot save: exit %d: %s %s", code, out, errOut)
	}
	c.forceDelete(t, "/registry/configmaps/shop/settings")
	c.forceDelete(t, "/registry/namespaces/shop")

	root := filepath.Join(t.TempDir(), "backups")
	run := onTerminalInteractive(t, append([]string{"recover", "--snapshot", snap, "-n", "shop", "--with-namespace", "--confirm", "--backup-dir", root, "--kubeconfig", c.kubeconfig}, c.etcdArgs()...)...)
	plan := run.question(t)
	if !strings.Contains(plan, "/registry/namespaces/shop") || !strings.Contains(plan, "/registry/configmaps/shop/settings") {
		t.Fatalf("the plan should write the namespace and its ConfigMap back:\n%s", plan)
	}
	c.createNamespace(t, "shop")
	c.createConfigMap(t, "shop", "settings", func(cm *corev1.ConfigMap) { cm.Data = map[string]string{"made": "since"} })
	before := c.state(t)
	run.answer(t, "yes")
	rest, code := run.wait(t)
	if code == 0 || !strings.Contains(rest, "the cluster changed since the plan") {
		t.Errorf("recover after the namespace came back: exit %d, want a refusal:\n%s", code, rest)
	}
	c.assertUnchanged(t, "a recovery whose plan no longer holds", before)
}
