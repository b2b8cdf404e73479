package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// TestStuckNamespaceGuide plays the namespace-stuck-terminating guide with
// the real namespace controller: billing held by a Widget whose operator is
// gone (kubectl, unstick's dry run, --confirm on a terminal, its restore
// refused), ledger's scan past --terminating-after, shop held by an
// APIService whose Service is gone (dry run, --confirm), web held by an
// APIService whose Service is a ghost of namespace adapters (refused, the
// purge's dry run and --confirm, unstick again), the backups unstick wrote
// and a restore's dry run. Every write compares the keyspace before and
// after; every output is the guide's.
func TestStuckNamespaceGuide(t *testing.T) {
	parallel(t)
	c := startCluster(t, clusterOptions{})
	c.startControllerManager(t, "namespace-controller", "garbage-collector-controller")
	ctx := context.Background()
	root := filepath.Join(shortTempDir(t), "backups")
	c.createCRD(t, "example.com", "widgets", "Widget")
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	// heldWidget deletes namespace ns, holding it with a Widget whose
	// finalizer nobody serves, and waits until the controller says so.
	heldWidget := func(ns, name string) {
		t.Helper()
		c.createNamespace(t, ns)
		obj := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]interface{}{"name": name, "namespace": ns, "finalizers": []interface{}{"example.com/cleanup"}}}}
		waitFor(t, 30*time.Second, "create "+name, func() error {
			_, err := c.dyn.Resource(widgets).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
			return created(err)
		})
		mustNoErr(t, "delete namespace "+ns, c.kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}))
		c.waitNamespaceCondition(t, ns, corev1.NamespaceFinalizersRemaining)
	}
	// confirmOnATerminal runs args with --confirm on a terminal, answers
	// yes, and returns what the guide shows: the plan left out (it is the
	// dry run's), the question on.
	confirmOnATerminal := func(args ...string) (string, int) {
		t.Helper()
		run := onTerminalInteractive(t, append(append(args, "--confirm", "--backup-dir", root, "--kubeconfig", c.kubeconfig), c.etcdArgs()...)...)
		plan := run.question(t)
		run.answer(t, "yes")
		rest, code := run.wait(t)
		return "…\n" + plan[strings.LastIndex(plan, "\n")+1:] + rest, code
	}

	// ledger first, alone: scan finds it past --terminating-after.
	heldWidget("ledger", "nightly-export")
	time.Sleep(16 * time.Second)
	out, errOut, code := c.regghost(t, "", "scan", "--terminating-after", "15s")
	checkCapture(t, "ledger-scan", code, errOut, out)
	if code != 0 || !strings.Contains(out, "stuck-terminating") {
		t.Errorf("scan --terminating-after 15s: exit %d, want ledger stuck-terminating (a suspect):\n%s", code, out)
	}
	_, err := c.dyn.Resource(widgets).Namespace("ledger").Patch(ctx, "nightly-export", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	mustNoErr(t, "let ledger go", err)
	waitFor(t, 60*time.Second, "namespace ledger to finish", func() error {
		if c.value(t, "/registry/namespaces/ledger") != nil {
			return errString("namespace ledger is still there")
		}
		return nil
	})

	heldWidget("billing", "invoice-sync")
	shown, _ := c.kubectlShown(t, "get", "namespace", "billing")
	checkCapture(t, "billing-kubectl", 0, shown)
	out, errOut, code = c.regghost(t, "", "unstick", "namespace", "billing")
	checkCapture(t, "billing-dry-run", code, errOut, out)
	before := c.state(t)
	shown, code = confirmOnATerminal("unstick", "namespace", "billing")
	checkCapture(t, "billing-confirm", code, shown)
	if code != 0 || !strings.Contains(shown, "namespace billing is gone, and nothing of it is left in etcd") {
		t.Fatalf("unstick billing --confirm: exit %d:\n%s", code, shown)
	}
	c.assertChangedOnly(t, "unstick billing", before, append(c.keysUnder(t, "billing"), keysOf(before, "billing")...))
	billingBackup := backupNamed(t, root, "unstick-namespace-billing")
	before = c.state(t)
	out, errOut, code = c.regghost(t, "", "restore", billingBackup, "--confirm", "--yes")
	checkCapture(t, "restore-billing", code, append([]string{"$ regghost restore " + billingBackup + " --confirm --yes"}, asShown(out, errOut, code)...)...)
	if code != 1 {
		t.Errorf("restore into a namespace that is gone: exit %d, want 1 (refused)", code)
	}
	c.assertUnchanged(t, "a refused restore", before)

	// shop: an APIService whose Service was deleted.
	c.createNamespace(t, "metrics")
	c.createHeadlessService(t, "metrics", "metrics-server")
	shopAPI := c.createAggregatedAPI(t, "custom.metrics.example.com", "v1beta1", "metrics", "metrics-server", nil)
	mustNoErr(t, "delete service metrics/metrics-server", c.kube.CoreV1().Services("metrics").Delete(ctx, "metrics-server", metav1.DeleteOptions{}))
	c.waitAPIServiceReason(t, "v1beta1.custom.metrics.example.com", "ServiceNotFound")
	c.createNamespace(t, "shop")
	c.createConfigMap(t, "shop", "settings")
	c.deleteAndWaitDiscoveryFailure(t, "shop")
	out, errOut, code = c.regghost(t, "", "unstick", "namespace", "shop")
	checkCapture(t, "shop-dry-run", code, errOut, out)
	before = c.state(t)
	shown, code = confirmOnATerminal("unstick", "namespace", "shop")
	checkCapture(t, "shop-confirm", code, shown)
	if code != 0 || !strings.Contains(shown, "namespace shop is gone") {
		t.Fatalf("unstick shop --confirm: exit %d:\n%s", code, shown)
	}
	c.assertChangedOnly(t, "unstick shop", before, append(append(c.keysUnder(t, "shop"), keysOf(before, "shop")...), shopAPI))

	// web: an APIService whose Service is a ghost of namespace adapters.
	c.createNamespace(t, "adapters")
	c.createHeadlessService(t, "adapters", "prometheus-adapter")
	webAPI := c.createAggregatedAPI(t, "external.metrics.example.com", "v1beta1", "adapters", "prometheus-adapter", nil)
	c.forceDelete(t, "/registry/namespaces/adapters")
	c.waitAPIServiceReason(t, "v1beta1.external.metrics.example.com", "EndpointsNotFound", "MissingEndpoints")
	c.createNamespace(t, "web")
	c.createConfigMap(t, "web", "settings")
	c.deleteAndWaitDiscoveryFailure(t, "web")
	before = c.state(t)
	out, errOut, code = c.regghost(t, "", "unstick", "namespace", "web", "--confirm", "--yes", "--backup-dir", root)
	checkCapture(t, "web-refused", code, append([]string{"$ regghost unstick namespace web --confirm --yes"}, asShown(out, errOut, code)...)...)
	if code != 1 {
		t.Errorf("unstick web --confirm: exit %d, want 1 (refused, the way out named)", code)
	}
	c.assertChangedOnly(t, "a refused unstick", before, c.keysUnder(t, "web"))
	out, errOut, code = c.regghost(t, "", "purge", "--namespace", "adapters", "--accept-impact", "callers-fail")
	checkCapture(t, "adapters-dry-run", code, errOut, out)
	before = c.state(t)
	shown, code = confirmOnATerminal("purge", "--namespace", "adapters", "--accept-impact", "callers-fail")
	checkCapture(t, "adapters-confirm", code, shown)
	if code != 0 {
		t.Fatalf("purge adapters: exit %d:\n%s", code, shown)
	}
	// The aggregator writes the APIService's status once its Service is
	// gone: the API server's write, not the purge's.
	c.assertChangedOnly(t, "the purge", before, append(c.keysUnder(t, "web"), "/registry/services/specs/adapters/prometheus-adapter", webAPI))
	before = c.state(t)
	shown, code = confirmOnATerminal("unstick", "namespace", "web")
	checkCapture(t, "web-confirm", code, shown)
	if code != 0 || !strings.Contains(shown, "namespace web is gone") {
		t.Fatalf("unstick web --confirm: exit %d:\n%s", code, shown)
	}
	c.assertChangedOnly(t, "unstick web", before, append(append(c.keysUnder(t, "web"), keysOf(before, "web")...), webAPI))

	out, errOut, code = runBinary(t, "", "backup", "ls", "--backup-dir", root)
	checkCapture(t, "backup-ls", code, errOut, out)
	shopBackup := backupNamed(t, root, "unstick-namespace-shop-dangling-apiservices")
	out, errOut, code = c.regghost(t, "", "restore", shopBackup)
	checkCapture(t, "restore-shop-dry-run", code, "$ regghost restore "+shopBackup, errOut, out)
	// Its Service is still gone: written back, the APIService would hang
	// every namespace deletion again, so the dry run refuses it and says
	// what to bring back first.
	if code != 1 || !strings.Contains(out, "refused") || !strings.Contains(oneLine(out), "metrics/metrics-server") {
		t.Errorf("restore's dry run: exit %d: %s\n%s", code, errOut, out)
	}
}

// keysOf is every key of state that belongs to namespace ns (its own, its
// objects, events).
func keysOf(state etcdState, ns string) []string {
	var keys []string
	for k := range state.kvs {
		if ofNamespace(k, ns) {
			keys = append(keys, k)
		}
	}
	return keys
}

// backupNamed is the one backup under root whose name ends in suffix.
func backupNamed(t *testing.T, root, suffix string) string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(root, "*-"+suffix))
	mustNoErr(t, "list backups", err)
	if len(dirs) != 1 {
		t.Fatalf("backups named *-%s under %s: %v, want one", suffix, root, dirs)
	}
	return dirs[0]
}
