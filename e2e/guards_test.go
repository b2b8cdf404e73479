package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/impact"
)

// TestWritersRefuseADBFile: purge, and unstick with --confirm, refuse --db
// with one line and exit code 2, writing nothing: the file holds the very
// ghosts the live etcd holds, and without the refusal purge would delete
// live keys on the file's verdict.
func TestWritersRefuseADBFile(t *testing.T) {
	parallel(t)
	c := startCluster(t, clusterOptions{})
	plantGhosts(t, c)
	db := filepath.Join(t.TempDir(), "snapshot.db")
	if _, errOut, code := runBinary(t, "", append([]string{"snapshot", "save", db}, c.etcdArgs()...)...); code != 0 {
		t.Fatalf("snapshot save: exit %d: %s", code, errOut)
	}
	before := c.state(t)
	for _, args := range [][]string{
		{"purge", "--namespace", "kb-system", "--accept-single-witness", "--confirm", "--yes"},
		{"purge", "--namespace", "kb-system"},
		{"unstick", "namespace", "kb-system", "--confirm", "--yes"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "backups")
			_, errOut, code := c.regghost(t, "", append(args, "--db", db, "--backup-dir", root)...)
			if code != 2 || !strings.Contains(errOut, "--db "+db+" reads a file offline") || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
				t.Errorf("exit %d, stderr %q", code, errOut)
			}
			if _, err := os.Stat(root); !os.IsNotExist(err) {
				t.Errorf("%s created the backup directory", args[0])
			}
		})
	}
	c.assertUnchanged(t, "a refused --db", before)
}

// TestRetainVolumesOnlyForClaimsThatGo: a claim bound to a volume whose
// reclaim policy is Delete sits in a ghost namespace behind four other
// ghosts. A purge with --retain-volumes stopped (SIGINT) after the first
// delete leaves the volume as it was: its claim was not deleted. Run
// again to the end, it sets the volume to Retain right before the claim's
// delete.
func TestRetainVolumesOnlyForClaimsThatGo(t *testing.T) {
	parallel(t)
	c := startCluster(t, clusterOptions{})
	ctx := context.Background()
	c.createNamespace(t, "vols")
	for i := 0; i < 4; i++ {
		c.createConfigMap(t, "vols", fmt.Sprintf("cm%d", i))
	}
	none := ""
	claim, err := c.kube.CoreV1().PersistentVolumeClaims("vols").Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "vols"},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &none, VolumeName: "pv-vols", AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")}}},
	}, metav1.CreateOptions{})
	mustNoErr(t, "create claim", err)
	_, err = c.kube.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-vols"},
		Spec: corev1.PersistentVolumeSpec{Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: filepath.Join(t.TempDir(), "pv")}},
			ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "vols", Name: "data", UID: claim.UID}},
	}, metav1.CreateOptions{})
	mustNoErr(t, "create volume", err)
	c.forceDelete(t, "/registry/namespaces/vols")
	claimKey, pvKey := "/registry/persistentvolumeclaims/vols/data", "/registry/persistentvolumes/pv-vols"
	policy := func() corev1.PersistentVolumeReclaimPolicy {
		pv, err := c.kube.CoreV1().PersistentVolumes().Get(ctx, "pv-vols", metav1.GetOptions{})
		mustNoErr(t, "get volume", err)
		return pv.Spec.PersistentVolumeReclaimPolicy
	}

	t.Run("stopped before its claim, the volume is left as it was", func(t *testing.T) {
		root := filepath.Join(t.TempDir(), "backups")
		cmd, out, errOut := c.startSlowPurge(t, root, "-n", "vols", impact.RetainVolumesFlag)
		mustNoErr(t, "interrupt", cmd.Process.Signal(syscall.SIGINT))
		if err := cmd.Wait(); err == nil || !strings.Contains(errOut.String(), "interrupted") {
			t.Fatalf("interrupted purge: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errOut.String())
		}
		if c.value(t, claimKey) == nil {
			t.Fatalf("the claim was deleted:\n%s", out.String())
		}
		if p := policy(); p != corev1.PersistentVolumeReclaimDelete {
			t.Errorf("the volume of a claim the purge left is %s:\n%s", p, out.String())
		}
		if !strings.Contains(out.String(), pvKey) || !strings.Contains(out.String(), string(etcdwrite.NotRetained)) {
			t.Errorf("the purge does not say the volume was left:\n%s", out.String())
		}
	})
	t.Run("run to the end, the volume is set to Retain right before its claim goes", func(t *testing.T) {
		root := filepath.Join(t.TempDir(), "backups")
		out, errOut, code := c.regghost(t, "", "purge", "-n", "vols", "--confirm", "--yes", impact.RetainVolumesFlag, "--backup-dir", root)
		if code != 0 {
			t.Fatalf("exit %d: %s\n%s", code, errOut, out)
		}
		if p := policy(); p != corev1.PersistentVolumeReclaimRetain {
			t.Errorf("volume reclaim policy %s", p)
		}
		if c.value(t, claimKey) != nil {
			t.Errorf("the claim is still in etcd")
		}
		retained, deleted := outcomeLine(out, pvKey, etcdwrite.Retained), outcomeLine(out, claimKey, etcdwrite.Deleted)
		if retained < 0 || deleted != retained+1 {
			t.Errorf("the volume's Retain is not reported right before its claim's delete:\n%s", out)
		}
	})
}

// outcomeLine is the number of the line of a result table that gives key
// this outcome, or -1.
func outcomeLine(out, key string, o etcdwrite.Outcome) int {
	for i, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == key && f[1] == string(o) {
			return i
		}
	}
	return -1
}
