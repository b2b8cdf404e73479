package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/regghost/regghost/pkg/impact"
)

// TestPurgeKnowsWhatDeletionsSetInMotion runs a real kube-controller-manager
// (PersistentVolume controller with the hostPath provisioner, garbage
// collector) beside the cluster. Namespace dbns holds a claim bound to a
// volume whose reclaim policy is Delete, with data in it; the namespace is
// force-deleted; purge must not let the PV controller destroy the data.
func TestPurgeKnowsWhatDeletionsSetInMotion(t *testing.T) {
	parallel(t)
	c := startCluster(t, clusterOptions{})
	c.startControllerManager(t, "persistentvolume-binder-controller", "garbage-collector-controller")
	ctx := context.Background()
	c.createNamespace(t, "dbns")
	pv := c.boundDeleteClaim(t, "dbns", "data")
	pvName := pv.Name
	dataDir := pv.Spec.HostPath.Path
	t.Cleanup(func() { os.RemoveAll(dataDir) })
	precious := filepath.Join(dataDir, "precious.db")
	mustNoErr(t, "write data", os.WriteFile(precious, []byte("the only copy"), 0o600))

	owner, err := c.kube.CoreV1().ConfigMaps("dbns").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: "dbns"}}, metav1.CreateOptions{})
	mustNoErr(t, "create owner", err)
	for _, n := range []string{"dep1", "dep2"} {
		c.createConfigMap(t, "dbns", n, func(cm *corev1.ConfigMap) {
			cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: owner.UID}}
		})
	}
	c.createConfigMap(t, "dbns", "guarded", func(cm *corev1.ConfigMap) { cm.Finalizers = []string{"example.com/cleanup"} })
	c.createPod(t, "dbns", "worker", func(p *corev1.Pod) { p.Spec.NodeName = "node-1" })
	_, err = c.kube.CoreV1().Services("dbns").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "front", Namespace: "dbns"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}}}, metav1.CreateOptions{})
	mustNoErr(t, "create LoadBalancer service", err)

	c.forceDelete(t, "/registry/namespaces/dbns")
	pvcKey, pvKey := "/registry/persistentvolumeclaims/dbns/data", "/registry/persistentvolumes/"+pvName
	root := filepath.Join(t.TempDir(), "backups")
	purge := func(args ...string) (string, string, int) {
		return c.regghost(t, "", append([]string{"purge", "-n", "dbns", "--backup-dir", root}, args...)...)
	}

	t.Run("the dry run shows every effect", func(t *testing.T) {
		out, errOut, code := purge()
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		// The default screen fits 120 columns: IMPACT is cut, what would be
		// refused is said whole in wrapped paragraphs, and the summary says
		// a purge is refused whole, one line per reason.
		assertFits(t, "the dry run of a purge with a refused claim", out, 120)
		for _, s := range []string{"IMPACT", "Would be refused: deleting " + pvcKey + " sets off what a restore cannot undo: the PersistentVolume controller releases PV " + pvName + " (reclaim policy Delete) and deletes its storage (" + dataDir + ")",
			"Way out: add " + impact.RetainVolumesFlag, "if that is what you want, add " + impact.AcceptImpactFlag + " load-balancer-deleted",
			"Refused as it stands: a purge is refused whole, so --confirm would delete none of these",
			"1 key needs " + impact.RetainVolumesFlag + ": deleting it sets off what a restore cannot undo (storage-destroyed)",
			"1 key needs " + impact.AcceptImpactFlag + " load-balancer-deleted"} {
			if !strings.Contains(flat(out), s) {
				t.Errorf("dry run lacks %q:\n%s", s, out)
			}
		}
		if strings.Contains(out, "Dry run: ") {
			t.Errorf("the dry run of a refused purge says its keys would be deleted:\n%s", out)
		}
		// -o wide prints every effect whole.
		wide, errOut, code := purge("-o", "wide")
		if code != 0 {
			t.Fatalf("-o wide: exit %d: %s", code, errOut)
		}
		for _, s := range []string{"IRREVERSIBLE: the PersistentVolume controller releases PV " + pvName + " (reclaim policy Delete) and deletes its storage (" + dataDir + ")",
			"finalizers [example.com/cleanup] never run", "the kubelet on node node-1 stops its containers", "IRREVERSIBLE: the service controller deletes its cloud load balancer",
			"its 2 dependents are in this purge too"} {
			if !strings.Contains(wide, s) {
				t.Errorf("-o wide lacks %q:\n%s", s, wide)
			}
		}
		out, _, _ = purge("-o", "json")
		var plan struct {
			Impact impact.Report `json:"impact"`
		}
		mustNoErr(t, "decode plan", json.Unmarshal([]byte(out), &plan))
		if e := plan.Impact.Effects[pvcKey]; len(e) == 0 || !hasEffect(e, impact.StorageDestroyed) {
			t.Errorf("json plan: effects of %s: %+v", pvcKey, e)
		}
	})
	t.Run("a claim on a Delete volume is refused and its data survives", func(t *testing.T) {
		before := c.state(t)
		out, errOut, code := purge("--confirm", "--yes")
		if code != 1 || !strings.Contains(errOut, impact.RetainVolumesFlag) || !strings.Contains(errOut, pvcKey) {
			t.Errorf("exit %d: %s\n%s", code, errOut, out)
		}
		assertFits(t, "a refused purge", out, 120)
		c.assertUnchanged(t, "a refused purge", before)
		if _, err := os.Stat(root); !os.IsNotExist(err) {
			t.Errorf("refused purge wrote %s", root)
		}
	})
	var dir string
	t.Run("with --retain-volumes the volume and its data stay", func(t *testing.T) {
		out, errOut, code := purge("--confirm", "--yes", impact.RetainVolumesFlag, impact.AcceptImpactFlag, "load-balancer-deleted")
		if code != 0 || !strings.Contains(out, "retained") {
			t.Fatalf("exit %d: %s\n%s", code, errOut, out)
		}
		dir = onlyBackupDir(t, root)
		if c.value(t, pvcKey) != nil {
			t.Errorf("%s is still in etcd", pvcKey)
		}
		waitFor(t, 30*time.Second, "the PV to be released", func() error {
			pv, err := c.kube.CoreV1().PersistentVolumes().Get(ctx, pvName, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain {
				t.Fatalf("PV reclaim policy %s", pv.Spec.PersistentVolumeReclaimPolicy)
			}
			if pv.Status.Phase != corev1.VolumeReleased {
				return errString("PV is " + string(pv.Status.Phase))
			}
			return nil
		})
		// Give the PV controller the time it took to destroy the data before.
		time.Sleep(5 * time.Second)
		if b, err := os.ReadFile(precious); err != nil || string(b) != "the only copy" {
			t.Errorf("the volume's data is gone: %v", err)
		}
		if c.value(t, pvKey) == nil {
			t.Errorf("the PV was deleted")
		}
	})
	t.Run("restore brings the claim back bound to its volume", func(t *testing.T) {
		out, errOut, code := c.regghost(t, "", "restore", dir, "--confirm", "--yes")
		if code != 0 || !strings.Contains(flat(out), "is there to bind it again") || !strings.Contains(out, "left-as-is") {
			t.Fatalf("exit %d: %s\n%s", code, errOut, out)
		}
		waitFor(t, 60*time.Second, "the claim and the volume to be bound again", func() error {
			pv, err := c.kube.CoreV1().PersistentVolumes().Get(ctx, pvName, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if pv.Status.Phase != corev1.VolumeBound {
				return errString("PV is " + string(pv.Status.Phase))
			}
			return nil
		})
		if b, err := os.ReadFile(precious); err != nil || string(b) != "the only copy" {
			t.Errorf("the volume's data is gone: %v", err)
		}
	})
	t.Run("an owner's dependents outside the purge are listed and refused", func(t *testing.T) {
		ownerKey := "/registry/configmaps/dbns/owner"
		out, errOut, code := c.regghost(t, "", "purge", ownerKey, "--backup-dir", root)
		if code != 0 || !strings.Contains(flat(out), "deletes 2 dependents this purge does not back up: /registry/configmaps/dbns/dep1, /registry/configmaps/dbns/dep2") {
			t.Errorf("exit %d: %s\n%s", code, errOut, out)
		}
		_, errOut, code = c.regghost(t, "", "purge", ownerKey, "--backup-dir", root, "--confirm", "--yes")
		if code != 1 || !strings.Contains(errOut, impact.AcceptImpactFlag+" dependents-deleted") {
			t.Errorf("exit %d: %s", code, errOut)
		}
		if c.value(t, ownerKey) == nil {
			t.Errorf("%s was deleted", ownerKey)
		}
	})
	t.Run("a restored claim whose volume is gone is reported", func(t *testing.T) {
		// Purge the claim again (volume already Retain), then lose the PV.
		root2 := filepath.Join(t.TempDir(), "b2")
		_, errOut, code := c.regghost(t, "", "purge", pvcKey, "--backup-dir", root2, "--confirm", "--yes")
		if code != 0 {
			t.Fatalf("purge the claim: exit %d: %s", code, errOut)
		}
		c.forceDelete(t, pvKey)
		out, errOut, code := c.regghost(t, "", "restore", onlyBackupDir(t, root2), "--confirm", "--yes")
		if code != 1 || !strings.Contains(out, "restored-without-volume") || !strings.Contains(errOut, "without its volume") {
			t.Errorf("exit %d: %s\n%s", code, errOut, out)
		}
	})
}

func hasEffect(effects []impact.Effect, k impact.Kind) bool {
	for _, e := range effects {
		if e.Kind == k {
			return true
		}
	}
	return false
}

// flat is out with its lines joined and its blanks collapsed: a paragraph
// wrapped to the screen reads as one line again.
func flat(out string) string {
	return strings.Join(strings.Fields(out), " ")
}

// assertFits fails when a line of out is wider than width columns.
func assertFits(t *testing.T, what, out string, width int) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(line); n > width {
			t.Errorf("%s: a line of %d columns, wider than %d: %q", what, n, width, line)
		}
	}
}
