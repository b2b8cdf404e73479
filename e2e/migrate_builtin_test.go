package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/regghost/regghost/internal/etcdtest"
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
//   - halfway, a v1.37.2 kube-apiserver beside the v1.34.4 one (both in the
//     kubernetes Service's endpoints), migrate refuses: the two store
//     DeviceClasses at different versions, and a rewrite through one may
//     undo the other's;
//   - once v1.34 is stopped, the DeviceClasses it stored at
//     resource.k8s.io/v1beta2 are named against the API server's storage
//     version (resource.k8s.io/v1, from its discovery), rewritten through it,
//     and counted again from etcd: only their keys changed, each now stored
//     at v1; a run again has nothing to move.
func TestMigrateBuiltinAcrossAnUpgrade(t *testing.T) {
	latest := bins.kubeAPIServer
	useRelease(t, kube134)
	port := freePort(t)
	c := startCluster(t, clusterOptions{apiserverIP: "127.0.0.2", apiserverPort: port, apiserverName: "apiserver-a", apiserverArgs: allAPIs})
	ctx := context.Background()
	create := func(c *cluster, gvr schema.GroupVersionResource, obj map[string]any) {
		t.Helper()
		u := &unstructured.Unstructured{Object: obj}
		waitFor(t, time.Minute, "create "+u.GetName(), func() error {
			_, err := c.dyn.Resource(gvr).Create(ctx, u, metav1.CreateOptions{})
			return created(err)
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
		checkCapture(t, "target-release", code, out, errOut)
		for _, want := range []string{"stores storageversionmigrations.storagemigration.k8s.io at storagemigration.k8s.io/v1alpha1",
			"1 object the release to upgrade to cannot read, which no rewrite here moves",
			"stored at storagemigration.k8s.io/v1alpha1, the API server's storage version, which Kubernetes v1.37 does not decode: a rewrite here stores it there again. Way out: delete these objects before the upgrade"} {
			if !strings.Contains(oneLine(out), want) {
				t.Errorf("output lacks %q", want)
			}
		}
		if code != 3 {
			t.Errorf("exit %d, want 3 (something the upgrade cannot read)", code)
		}
		_, errOut, code = c.regghost(t, "", "migrate", "storageversionmigrations.storagemigration.k8s.io", "--target-release", "v1.37", "--confirm", "--yes")
		if code != 1 || !strings.Contains(errOut, "refused: nothing of storageversionmigrations.storagemigration.k8s.io can be rewritten (named above); nothing was changed") {
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

	// Started here, not in a subtest: it outlives the subtest.
	upgraded := *c
	upgraded.startAPIServer(t, clusterOptions{apiserverIP: "127.0.0.3", apiserverPort: port, apiserverBin: latest, apiserverName: "apiserver-b", apiserverArgs: allAPIs})
	t.Run("halfway through the upgrade", func(t *testing.T) {
		c.registerAPIServers(t, port, "127.0.0.2", "127.0.0.3")
		before := c.state(t)
		out, errOut, code := upgraded.regghost(t, "", "migrate", "deviceclasses.resource.k8s.io", "--confirm", "--yes")
		if code != 1 || !strings.Contains(oneLine(errOut), "refused: the API servers disagree on deviceclasses.resource.k8s.io") ||
			!strings.Contains(oneLine(errOut), "finish the upgrade of every control-plane node, then run again") {
			t.Errorf("exit %d\n%s\n%s", code, out, errOut)
		}
		c.assertUnchanged(t, "migrate refused halfway", before)
	})

	t.Run("after the upgrade, what v1.34 stored at an older version", func(t *testing.T) {
		// v1.34 stops; the kubernetes Service lists v1.37 alone.
		mustNoErr(t, "stop kube-apiserver v1.34.4", c.apiserver.cmd.Process.Kill())
		<-c.apiserver.done
		c.registerAPIServers(t, port, "127.0.0.3")
		out, errOut, code := upgraded.regghost(t, "", "migrate", "deviceclasses.resource.k8s.io")
		t.Logf("migrate (dry run):\n%s\nstderr:\n%s", out, errOut)
		checkCapture(t, "deviceclasses-dry-run", code, out, errOut)
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
		checkCapture(t, "deviceclasses-confirm", code, out, errOut)
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

// registerAPIServers writes the default/kubernetes EndpointSlice as the
// kube-apiservers at addrs (on port) would register themselves (validation
// refuses loopback addresses there, so the test writes it).
func (c *cluster) registerAPIServers(t *testing.T, port int, addrs ...string) {
	t.Helper()
	https, ready, p := "https", true, int32(port)
	var eps []discoveryv1.Endpoint
	for _, a := range addrs {
		eps = append(eps, discoveryv1.Endpoint{Addresses: []string{a}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}})
	}
	c.put(t, "/registry/endpointslices/default/kubernetes", []byte(etcdtest.Encode(t, &discoveryv1.EndpointSlice{
		TypeMeta:    metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"},
		ObjectMeta:  metav1.ObjectMeta{Name: "kubernetes", Namespace: "default", UID: "5d0f6a2e-8d0e-4d55-9a43-0b7f2f1f2a01", Labels: map[string]string{discoveryv1.LabelServiceName: "kubernetes"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   eps,
		Ports:       []discoveryv1.EndpointPort{{Name: &https, Port: &p}},
	})))
}
