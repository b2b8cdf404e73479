package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// smallDisk mounts a tmpfs of 64 MiB: a filesystem that cannot keep the
// reserve (a tenth of it, at least 1 GiB) whatever is written there.
func smallDisk(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "small")
	mustNoErr(t, "mkdir", os.MkdirAll(dir, 0o700))
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (needs root): %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", dir).Run() })
	return dir
}

// TestBackupsKeepTheDiskReserve: every snapshot and backup regghost writes
// before a change keeps the reserve the node's disk needs (kubelet evicts
// pods below a tenth free; etcd's data may share it). On a backup
// directory that cannot keep it, a purge (snapshot and backup) and a
// dangling fix (backup only) are refused before anything is written:
// nothing in etcd changes, nothing is left in the directory.
func TestBackupsKeepTheDiskReserve(t *testing.T) {
	parallel(t)
	c := startCluster(t, clusterOptions{})
	ctx := context.Background()
	small := smallDisk(t)
	c.createNamespace(t, "gone-ns")
	c.createConfigMap(t, "gone-ns", "left")
	c.forceDelete(t, "/registry/namespaces/gone-ns")
	c.createNamespace(t, "team")
	_, err := c.kube.CoreV1().ServiceAccounts("team").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "ci", Namespace: "team"}}, metav1.CreateOptions{})
	mustNoErr(t, "create ServiceAccount", err)
	_, err = c.kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "ci-view"},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}, Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "team", Name: "ci"}}}, metav1.CreateOptions{})
	mustNoErr(t, "create ClusterRoleBinding", err)
	mustNoErr(t, "delete ServiceAccount", c.kube.CoreV1().ServiceAccounts("team").Delete(ctx, "ci", metav1.DeleteOptions{}))

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"purge", []string{"purge", "--namespace", "gone-ns"}, "no room for the snapshot and backup"},
		{"dangling", []string{"dangling"}, "no room for the backup"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := c.state(t)
			out, errOut, code := c.regghost(t, "", append(tc.args, "--confirm", "--yes", "--backup-dir", small)...)
			flat := strings.Join(strings.Fields(errOut), " ")
			if code == 0 || !strings.Contains(flat, tc.want) || !strings.Contains(flat, "must keep 1024 MiB") || !strings.Contains(flat, "nothing was written") {
				t.Errorf("%s on a disk without room: exit %d, want a refusal saying %q:\n%s\n%s", tc.name, code, tc.want, out, errOut)
			}
			c.assertUnchanged(t, tc.name+" refused for room", before)
			entries, err := os.ReadDir(small)
			mustNoErr(t, "read backup dir", err)
			if len(entries) != 0 {
				t.Errorf("%s left %d entries in the backup directory", tc.name, len(entries))
			}
		})
	}
}
