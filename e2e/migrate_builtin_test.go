package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/regghost/regghost/pkg/decode"
)

// TestMigrateBuiltinAcrossAnUpgrade upgrades a control plane from
// kube-apiserver v1.34.4 (every API on) to v1.37.2 on the same etcd, and
// judges built-in objects with migrate as an operator would around it:
//
//   - on v1.34, before the upgrade, --target-release v1.37 names the
//     StorageVersionMigration v1.34 stores at v1alpha1 (which v1.37 does not
//     decode, and a rewrite stores there again) with its way out, and says
//     nothing to move for VolumeAttributesClasses stored at
//     storage.k8s.io/v1beta1 (v1.37 no longer serves it but still decodes it);
//   - on v1.37, the DeviceClasses v1.34 stored at resource.k8s.io/v1beta2
//     are named against the API server's storage version (resource.k8s.io/v1,
//     from its discovery), rewritten through it, and counted again from etcd:
//     only their keys changed, each now stored at v1; a run again has
//     nothing to move.
func TestMigrateBuiltinAcrossAnUpgrade(t *testing.T) {
	latest := bins.kubeAPIServer
	useRelease(t, kube134)
	c := startCluster(t, clusterOptions{apiserverArgs: allAPIs})
	ctx := context.Background()
	create := func(c *cluster, gvr schema.GroupVersionResource, obj map[string]any) {
		t.Helper()
		u := &unstructured.Unstructured{Object: obj}
		waitFor(t, time.Minute, "create "+u.GetName(), func() error {
			_, err := c.dyn.Resource(gvr).Create(ctx, u, metav1.CreateOptions{})
			return err
		})
	}
	deviceClasses := schema.GroupVersionResource{Group: "resource.k8s.io", Version: "v1", Resource: "deviceclasses"}
	const classes = 30
	for i := range classes {
		create(c, deviceClasses, map[string]any{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
			"metadata": map[string]any{"name": fmt.Sprintf("gpu-%d.example.com", i)},
			"spec": map[string]any{"selectors": []any{map[string]any{"cel": map[string]any{
				"expression": fmt.Sprintf("device.driver == 'gpu.example.com' && device.attributes['gpu.example.com'].model == 'm%d'", i)}}}}})
	}
	create(c, schema.GroupVersionResource{Group: "storage.k8s.io", Version: "v1", Resource: "volumeattributesclasses"},
		map[string]any{"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttributesClass", "metadata": map[string]any{"name": "fast"},
			"driverName": "csi.example.com", "parameters": map[string]any{"iops": "3000"}})
	svm := schema.GroupVersionResource{Group: "storagemigration.k8s.io", Version: "v1alpha1", Resource: "storageversionmigrations"}
	create(c, svm, map[string]any{"apiVersion": "storagemigration.k8s.io/v1alpha1", "kind": "StorageVersionMigration",
		"metadata": map[string]any{"name": "configmaps"},
		"spec":     map[string]any{"resource": map[string]any{"group": "", "version": "v1", "resource": "configmaps"}}})
	storedAs := func(prefix string) map[string]int {
		t.Helper()
		at := map[string]int{}
		for _, k := range keysUnderPrefix(t, c, prefix) {
			resp, err := c.etcd.Get(ctx, k)
			mustNoErr(t, "read "+k, err)
			m, err := decode.Meta(resp.Kvs[0].Value)
			mustNoErr(t, "decode "+k, err)
			at[m.APIVersion]++
		}
		return at
	}
	const classPrefix = "/registry/deviceclasses/"
	if at := storedAs(classPrefix); at["resource.k8s.io/v1beta2"] != classes {
		t.Fatalf("v1.34 stored the DeviceClasses at %v, not resource.k8s.io/v1beta2: pick another resource whose storage version moved", at)
	}

	t.Run("before the upgrade, what v1.37 cannot read", func(t *testing.T) {
		before := c.state(t)
		out, errOut, code := c.regghost(t, "", "migrate", "storageversionmigrations.storagemigration.k8s.io", "--target-release", "v1.37")
		t.Logf("migrate --target-release v1.37:\n%s\n%s", out, errOut)
		for _, want := range []string{"stores storageversionmigrations.storagemigration.k8s.io at storagemigration.k8s.io/v1alpha1",
			"1 object the release to upgrade to cannot read, which no rewrite here moves",
			"Kubernetes v1.37 does not decode storagemigration.k8s.io/v1alpha1, and a rewrite here stores it there again. Way out: delete these objects before the upgrade"} {
			if !strings.Contains(oneLine(out), want) {
				t.Errorf("output lacks %q", want)
			}
		}
		if code != 3 {
			t.Errorf("exit %d, want 3 (something the upgrade cannot read)", code)
		}
		_, errOut, code = c.regghost(t, "", "migrate", "storageversionmigrations.storagemigration.k8s.io", "--target-release", "v1.37", "--confirm", "--yes")
		if code != 1 || !strings.Contains(errOut, "refused: no object of storageversionmigrations.storagemigration.k8s.io can be rewritten (0 cannot be read, 1 no rewrite here moves); nothing was changed") {
			t.Errorf("--confirm: exit %d: %s", code, errOut)
		}
		out, errOut, code = c.regghost(t, "", "migrate", "volumeattributesclasses.storage.k8s.io", "--target-release", "v1.37.2")
		if code != 0 || !strings.Contains(oneLine(out), "Nothing to move: every object of volumeattributesclasses.storage.k8s.io is stored at storage.k8s.io/v1beta1 and where Kubernetes v1.37 reads it") {
			t.Errorf("VolumeAttributesClasses: exit %d\n%s\n%s", code, out, errOut)
		}
		c.assertUnchanged(t, "migrate --target-release", before)
		// The way out it gave.
		mustNoErr(t, "delete the StorageVersionMigration", c.dyn.Resource(svm).Delete(ctx, "configmaps", metav1.DeleteOptions{}))
		if out, errOut, code := c.regghost(t, "", "migrate", "storageversionmigrations.storagemigration.k8s.io", "--target-release", "v1.37"); code != 0 {
			t.Errorf("after the delete: exit %d\n%s\n%s", code, out, errOut)
		}
	})

	t.Run("after the upgrade, what v1.34 stored at an older version", func(t *testing.T) {
		upgraded := *c
		upgraded.startAPIServer(t, clusterOptions{apiserverBin: latest, apiserverName: "apiserver-latest", apiserverArgs: allAPIs})
		out, errOut, code := upgraded.regghost(t, "", "migrate", "deviceclasses.resource.k8s.io")
		t.Logf("migrate (dry run):\n%s\n%s", out, errOut)
		for _, want := range []string{"stores deviceclasses.resource.k8s.io at resource.k8s.io/v1 (its discovery's storageVersionHash)",
			fmt.Sprintf("%d objects to rewrite", classes), "stored at resource.k8s.io/v1beta2, not resource.k8s.io/v1 (the API server's storage version)"} {
			if !strings.Contains(oneLine(out), want) {
				t.Errorf("dry run lacks %q", want)
			}
		}
		if code != 3 {
			t.Errorf("dry run: exit %d, want 3", code)
		}
		before := upgraded.state(t)
		out, errOut, code = upgraded.regghost(t, "", "migrate", "deviceclasses.resource.k8s.io", "--confirm", "--yes")
		t.Logf("migrate --confirm:\n%s\n%s", out, errOut)
		if code != 0 || !strings.Contains(oneLine(out), "0 objects of deviceclasses.resource.k8s.io stored at resource.k8s.io/v1beta2") {
			t.Errorf("migrate --confirm: exit %d", code)
		}
		upgraded.assertChangedOnly(t, "migrate", before, keysUnderPrefix(t, c, classPrefix))
		if at := storedAs(classPrefix); at["resource.k8s.io/v1"] != classes || len(at) != 1 {
			t.Errorf("etcd holds the DeviceClasses at %v", at)
		}
		before = upgraded.state(t)
		if out, errOut, code := upgraded.regghost(t, "", "migrate", "deviceclasses.resource.k8s.io", "--confirm", "--yes"); code != 0 || !strings.Contains(oneLine(out), "Nothing to move") {
			t.Errorf("a run again: exit %d\n%s\n%s", code, out, errOut)
		}
		upgraded.assertUnchanged(t, "migrate with nothing to move", before)
	})
}
