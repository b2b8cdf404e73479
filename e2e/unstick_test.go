package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdwrite"
)

// TestUnstick runs the real namespace controller: a namespace held by a
// custom resource whose operator is gone, a CRD held by a custom resource's
// finalizer, and a namespace whose deletion waits for an unavailable
// APIService. unstick explains each, finishes the first two through the API
// server leaving nothing in etcd, and refuses the third.
func TestUnstick(t *testing.T) {
	parallel(t)
	c := startCluster(t, clusterOptions{})
	c.startControllerManager(t, "namespace-controller", "garbage-collector-controller")
	ctx := context.Background()
	c.createCRD(t, "example.com", "widgets", "Widget")
	finalized := func(gvr schema.GroupVersionResource, kind, ns, name string) {
		t.Helper()
		obj := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": gvr.Group + "/" + gvr.Version, "kind": kind,
			"metadata": map[string]interface{}{"name": name, "namespace": ns, "finalizers": []interface{}{"example.com/cleanup"}}}}
		waitFor(t, 30*time.Second, "create "+name, func() error {
			_, err := c.dyn.Resource(gvr).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
			return created(err)
		})
	}
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	root := filepath.Join(t.TempDir(), "backups")

	t.Run("a namespace held by a custom resource whose operator is gone", func(t *testing.T) {
		c.createNamespace(t, "app")
		finalized(widgets, "Widget", "app", "w1")
		c.createConfigMap(t, "app", "plain")
		mustNoErr(t, "delete namespace", c.kube.CoreV1().Namespaces().Delete(ctx, "app", metav1.DeleteOptions{}))
		waitFor(t, 60*time.Second, "the namespace to be stuck on the widget", func() error {
			ns, err := c.kube.CoreV1().Namespaces().Get(ctx, "app", metav1.GetOptions{})
			if err != nil {
				return err
			}
			for _, cond := range ns.Status.Conditions {
				if cond.Type == "NamespaceFinalizersRemaining" && cond.Status == "True" {
					return nil
				}
			}
			return errString("no NamespaceFinalizersRemaining condition yet")
		})
		out, errOut, code := c.regghost(t, "", "unstick", "namespace", "app")
		for _, s := range []string{"Terminating for", "NamespaceFinalizersRemaining", "/registry/example.com/widgets/app/w1", "example.com/cleanup", "its operator is gone", "Next: remove the finalizers", "Dry run"} {
			if !strings.Contains(out, s) {
				t.Errorf("unstick dry run lacks %q: exit %d: %s\n%s", s, code, errOut, out)
			}
		}
		if c.value(t, "/registry/example.com/widgets/app/w1") == nil {
			t.Fatal("the dry run changed something")
		}
		out, errOut, code = c.regghost(t, "", "unstick", "namespace", "app", "--confirm", "--yes", "--backup-dir", root)
		if code != 0 || !strings.Contains(out, "namespace app is gone, and nothing of it is left in etcd") {
			t.Fatalf("unstick: exit %d: %s\n%s", code, errOut, out)
		}
		if c.value(t, "/registry/namespaces/app") != nil || c.value(t, "/registry/example.com/widgets/app/w1") != nil {
			t.Error("the namespace or its widget is still in etcd")
		}
		b, err := backup.ReadBackup(onlyBackupDir(t, root))
		mustNoErr(t, "read backup", err)
		if b.Count != 1 || b.Entries[0].Key != "/registry/example.com/widgets/app/w1" {
			t.Errorf("backup holds %+v", b.Entries)
		}
		// Its undo would put the widget back into a namespace that is gone:
		// a ghost the backup never held. Refused, in the dry run too, and
		// nothing is written.
		dir := onlyBackupDir(t, root)
		before := c.state(t)
		for _, args := range [][]string{{"restore", dir}, {"restore", dir, "--confirm", "--yes"}} {
			out, errOut, code := c.regghost(t, "", args...)
			flat := strings.Join(strings.Fields(out+errOut), " ")
			if code == 0 || !strings.Contains(flat, "namespace app existed when the backup was taken and is gone now: written back, the key would be a ghost") {
				t.Errorf("%v: exit %d, want the widget refused for its gone namespace:\n%s\n%s", args, code, out, errOut)
			}
		}
		c.assertUnchanged(t, "restore of unstick's backup", before)
	})
	t.Run("a CRD held by a custom resource's finalizer", func(t *testing.T) {
		c.createCRD(t, "example.com", "gizmos", "Gizmo")
		c.createNamespace(t, "lab")
		finalized(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gizmos"}, "Gizmo", "lab", "g1")
		mustNoErr(t, "delete CRD", c.dyn.Resource(crdGVR).Delete(ctx, "gizmos.example.com", metav1.DeleteOptions{}))
		// The API server's CRD cleanup deletes the gizmos: g1 stays,
		// deleting, on its finalizer.
		waitFor(t, 60*time.Second, "g1 to be deleting", func() error {
			u, err := c.dyn.Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gizmos"}).Namespace("lab").Get(ctx, "g1", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if u.GetDeletionTimestamp() == nil {
				return errString("no deletionTimestamp yet")
			}
			return nil
		})
		if c.value(t, "/registry/apiextensions.k8s.io/customresourcedefinitions/gizmos.example.com") == nil {
			t.Fatal("the CRD is not stuck")
		}
		out, errOut, code := c.regghost(t, "", "unstick", "crd", "gizmos.example.com", "--confirm", "--yes", "--backup-dir", filepath.Join(t.TempDir(), "b"))
		if code != 0 || !strings.Contains(out, "customresourcedefinition gizmos.example.com is gone, and nothing of it is left in etcd") || !strings.Contains(out, "example.com/cleanup") {
			t.Fatalf("unstick crd: exit %d: %s\n%s", code, errOut, out)
		}
	})
	t.Run("a namespace held by its own finalizer of a controller that is gone", func(t *testing.T) {
		c.heldByItsOwnFinalizers(t, "app3", nil)
		out, errOut, code := c.regghost(t, "", "unstick", "namespace", "app3", "--confirm", "--yes", "--backup-dir", filepath.Join(t.TempDir(), "b3"))
		if code != 0 || !strings.Contains(out, "namespace app3 is gone, and nothing of it is left in etcd") || !strings.Contains(out, "removed from spec.finalizers") {
			t.Fatalf("exit %d: %s\n%s", code, errOut, out)
		}
	})
	t.Run("a namespace with custom finalizers in both its lists", func(t *testing.T) {
		c.heldByItsOwnFinalizers(t, "twolists", []string{"example.com/meta-gone"})
		out, errOut, code := c.regghost(t, "", "unstick", "namespace", "twolists", "--confirm", "--yes", "--backup-dir", filepath.Join(t.TempDir(), "b2l"))
		if code != 0 || !strings.Contains(out, "namespace twolists is gone, and nothing of it is left in etcd") || strings.Contains(out, "changed since it was reviewed") {
			t.Fatalf("unstick of a namespace with both lists: exit %d: %s\n%s", code, errOut, out)
		}
	})
	t.Run("its backup is not restored into the namespace created again", func(t *testing.T) {
		// The namespace holds its own finalizer of a controller that is
		// gone, and a ConfigMap and a widget held by theirs: unstick backs
		// up the namespace key and both, each needing the namespace at its
		// create revision.
		_, err := c.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant"},
			Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"kubernetes", "example.com/gone"}}}, metav1.CreateOptions{})
		mustNoErr(t, "create namespace", err)
		_, err = c.kube.CoreV1().ConfigMaps("tenant").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/cleanup"}},
			Data: map[string]string{"password": "old tenant's"}}, metav1.CreateOptions{})
		mustNoErr(t, "create ConfigMap", err)
		finalized(widgets, "Widget", "tenant", "w9")
		mustNoErr(t, "delete namespace", c.kube.CoreV1().Namespaces().Delete(ctx, "tenant", metav1.DeleteOptions{}))
		waitFor(t, 60*time.Second, "tenant to be stuck on its finalizers", func() error {
			ns, err := c.kube.CoreV1().Namespaces().Get(ctx, "tenant", metav1.GetOptions{})
			if err != nil {
				return err
			}
			for _, cond := range ns.Status.Conditions {
				if cond.Type == "NamespaceFinalizersRemaining" && cond.Status == "True" {
					return nil
				}
			}
			return errString("no NamespaceFinalizersRemaining condition yet")
		})
		root := filepath.Join(t.TempDir(), "b9")
		out, errOut, code := c.regghost(t, "", "unstick", "namespace", "tenant", "--confirm", "--yes", "--backup-dir", root)
		if code != 0 || !strings.Contains(out, "namespace tenant is gone") {
			t.Fatalf("unstick: exit %d: %s\n%s", code, errOut, out)
		}
		// GitOps creates the namespace again, for another tenant.
		c.createNamespace(t, "tenant")
		dir := onlyBackupDir(t, root)
		b, err := backup.ReadBackup(dir)
		mustNoErr(t, "read backup", err)
		if b.ScanRevision == 0 {
			t.Errorf("unstick's backup records no scan revision")
		}
		before := c.state(t)
		for _, args := range [][]string{{"restore", dir}, {"restore", dir, "--confirm", "--yes"}} {
			out, errOut, code := c.regghost(t, "", args...)
			flat := strings.Join(strings.Fields(out+errOut), " ")
			if code == 0 || !strings.Contains(flat, "namespace tenant") || !strings.Contains(flat, "created again since the backup") ||
				strings.Contains(flat, "would-restore /registry/configmaps/tenant/held") {
				t.Errorf("%v: exit %d, want the old tenant's keys refused:\n%s\n%s", args, code, out, errOut)
			}
		}
		c.assertUnchanged(t, "restore of unstick's backup into a namespace created again", before)
	})
	t.Run("refused while an API the namespace controller needs is unavailable", func(t *testing.T) {
		c.createNamespace(t, "app2")
		finalized(widgets, "Widget", "app2", "w2")
		// The Service exists with no endpoint: the APIService is down, not
		// dangling, and nothing may be deleted.
		_, err := c.kube.CoreV1().Services("kube-system").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "metrics-server", Namespace: "kube-system"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 443}}}}, metav1.CreateOptions{})
		mustNoErr(t, "create Service", err)
		_, err = c.dyn.Resource(apiServiceGVR).Create(ctx, &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": map[string]interface{}{"name": "v1beta1.metrics.k8s.io"},
			"spec": map[string]interface{}{"group": "metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": int64(100), "versionPriority": int64(100),
				"insecureSkipTLSVerify": true, "service": map[string]interface{}{"namespace": "kube-system", "name": "metrics-server"}},
		}}, metav1.CreateOptions{})
		mustNoErr(t, "create APIService", err)
		mustNoErr(t, "delete namespace", c.kube.CoreV1().Namespaces().Delete(ctx, "app2", metav1.DeleteOptions{}))
		waitFor(t, 30*time.Second, "discovery of metrics.k8s.io to fail", func() error {
			if _, err := c.kube.Discovery().ServerResourcesForGroupVersion("metrics.k8s.io/v1beta1"); err == nil {
				return errString("metrics.k8s.io discovered")
			}
			return nil
		})
		w2 := "/registry/example.com/widgets/app2/w2"
		before := c.value(t, w2)
		root2 := filepath.Join(t.TempDir(), "b2")
		out, errOut, code := c.regghost(t, "", "unstick", "namespace", "app2", "--confirm", "--yes", "--backup-dir", root2)
		if code != 1 || !strings.Contains(errOut, "is unavailable (service kube-system/metrics-server exists but has no ready endpoint") ||
			!strings.Contains(errOut, "--delete-unavailable-apiservice v1beta1.metrics.k8s.io") || !strings.Contains(out, "metrics") {
			t.Errorf("exit %d: %s\n%s", code, errOut, out)
		}
		if after := c.value(t, w2); string(after) != string(before) {
			t.Errorf("a refused unstick changed %s", w2)
		}
		if _, err := os.Stat(root2); !os.IsNotExist(err) {
			t.Errorf("a refused unstick wrote %s", root2)
		}
	})
}

// TestUnstickNamesTheWayOutOfAGhostService: an APIService whose Service is
// a ghost of a force-deleted namespace (still stored and served, without
// endpoints) stalls every namespace deletion. unstick cannot end that
// itself: it names the ghost namespace and the exact commands, in order,
// and running them as printed ends the stall.
func TestUnstickNamesTheWayOutOfAGhostService(t *testing.T) {
	parallel(t)
	c := startCluster(t, clusterOptions{})
	c.startControllerManager(t, "namespace-controller", "garbage-collector-controller")
	ctx := context.Background()
	_, apiKey := c.apiServiceOfAForceDeletedNamespace(t)
	c.createNamespace(t, "app")
	c.createConfigMap(t, "app", "settings")
	c.deleteAndWaitDiscoveryFailure(t, "app")

	before := c.state(t)
	out, errOut, code := c.regghost(t, "", "unstick", "namespace", "app", "--confirm", "--yes")
	flat := strings.Join(strings.Fields(out+" "+errOut), " ")
	purge := "regghost purge --namespace metrics-ns --accept-impact callers-fail --confirm"
	again := "regghost unstick namespace app --confirm"
	if code == 0 || !strings.Contains(flat, "ghost of namespace metrics-ns: first `"+purge+"`, then `"+again+"`") {
		t.Fatalf("unstick --confirm: exit %d, want a refusal naming the ghost namespace and the commands in order:\n%s\n%s", code, out, errOut)
	}
	c.assertUnchanged(t, "a refused unstick", before)

	root := filepath.Join(t.TempDir(), "backups")
	names, _, _ := c.regghost(t, "", "purge", "--namespace", "metrics-ns", "--accept-impact", "callers-fail", "-o", "name")
	planned := strings.Fields(names)
	if !contains(planned, "/registry/services/specs/metrics-ns/metrics") {
		t.Fatalf("the purge does not plan the ghost Service: %v", planned)
	}
	before = c.state(t)
	args := append(strings.Fields(purge)[1:], "--yes", "--backup-dir", root)
	if out, errOut, code := c.regghost(t, "", args...); code != 0 {
		t.Fatalf("%s: exit %d: %s\n%s", purge, code, errOut, out)
	}
	// Once the Service is gone the aggregator writes the APIService's
	// status (ServiceNotFound): the API server's write, not the purge's.
	c.assertChangedOnly(t, "the purge", before, append(planned, apiKey))
	args = append(strings.Fields(again)[1:], "--yes", "--backup-dir", root)
	if out, errOut, code := c.regghost(t, "", args...); code != 0 {
		t.Fatalf("%s: exit %d: %s\n%s", again, code, errOut, out)
	}
	if c.value(t, apiKey) != nil || c.value(t, "/registry/namespaces/app") != nil {
		t.Error("the APIService or namespace app is still in etcd")
	}
	if _, err := c.kube.CoreV1().Namespaces().Get(ctx, "app", metav1.GetOptions{}); err == nil {
		t.Error("namespace app is still served")
	}
}

// TestUnstickAsksAgainForWhatItsFirstStepRevealed: a namespace held by a
// dangling APIService (its Service gone) and, unseen, by a custom resource
// whose operator is gone. The plan the operator confirms names the
// APIService only: the namespace controller had not yet started on the
// widget. It starts while the question waits; once the APIService is
// deleted, unstick finds the widget's finalizer, which the plan did not
// show, shows it and asks again: "no" stops there with only the APIService
// deleted; the next run names the widget in its plan and ends the deletion.
func TestUnstickAsksAgainForWhatItsFirstStepRevealed(t *testing.T) {
	parallel(t)
	c := startCluster(t, clusterOptions{})
	ctx := context.Background()
	widgets, apiKey := heldByAPIServiceAndAWidget(t, c)
	const w1 = "/registry/example.com/widgets/app/w1"
	root := filepath.Join(t.TempDir(), "backups")
	args := append([]string{"unstick", "namespace", "app", "--confirm", "--backup-dir", root, "--kubeconfig", c.kubeconfig}, c.etcdArgs()...)

	run := onTerminalInteractive(t, args...)
	plan := run.question(t)
	if !strings.Contains(plan, "v1beta1.metrics.k8s.io") || !strings.Contains(oneLine(plan), "Delete 1 dangling APIService, then annotate namespace app regghost.io/unblocked-at") || strings.Contains(plan, w1) {
		t.Fatalf("the plan should name the APIService and not the widget:\n%s", plan)
	}
	// While the question waits, the namespace controller starts: it
	// deletes what it can discover, the widget included, which its
	// finalizer holds.
	c.startControllerManager(t, "namespace-controller")
	waitWidgetDeleting(t, c, widgets)
	before := c.state(t)
	run.answer(t, "yes")
	shown := run.question(t)
	flat := strings.Join(strings.Fields(shown), " ")
	if !strings.Contains(flat, "which the plan did not show") || !strings.Contains(flat, w1+": remove example.com/cleanup") {
		t.Fatalf("the second question does not show the widget the first step revealed:\n%s", shown)
	}
	run.answer(t, "no")
	rest, code := run.wait(t)
	flat = strings.Join(strings.Fields(rest), " ")
	if code == 0 || !strings.Contains(flat, "the plan did not show") || !strings.Contains(flat, "run `regghost unstick namespace app` to review them") {
		t.Fatalf("after no: exit %d, want a stop naming what to run:\n%s", code, rest)
	}
	// Only the APIService is gone (the namespace is the controller's and
	// the nudge's write); the widget keeps its finalizer.
	c.assertChangedOnly(t, "unstick answered no to what it revealed", before, []string{apiKey, "/registry/namespaces/app"})
	if c.value(t, apiKey) != nil {
		t.Error("the confirmed APIService deletion did not happen")
	}
	u, err := c.dyn.Resource(widgets).Namespace("app").Get(ctx, "w1", metav1.GetOptions{})
	if err != nil || len(u.GetFinalizers()) != 1 {
		t.Fatalf("the widget lost its finalizer without a yes: %v %v", err, u)
	}

	// The next run shows the widget in its plan, and ends the deletion.
	out, errOut, code := c.regghost(t, "", "unstick", "namespace", "app")
	if !strings.Contains(out, w1) || !strings.Contains(out, "example.com/cleanup") {
		t.Fatalf("the next dry run does not name the widget: exit %d: %s\n%s", code, errOut, out)
	}
	out, errOut, code = c.regghost(t, "", "unstick", "namespace", "app", "--confirm", "--yes", "--backup-dir", root)
	if code != 0 || !strings.Contains(out, "namespace app is gone, and nothing of it is left in etcd") {
		t.Fatalf("unstick: exit %d: %s\n%s", code, errOut, out)
	}
}

// heldByAPIServiceAndAWidget stages TestUnstickAsksAgain's namespace: app,
// Terminating, held by a dangling APIService (its Service gone, discovery
// of metrics.k8s.io failing) and by widget w1's finalizer, whose operator
// is gone, which no namespace controller has started on yet.
func heldByAPIServiceAndAWidget(t *testing.T, c *cluster) (widgets schema.GroupVersionResource, apiKey string) {
	t.Helper()
	ctx := context.Background()
	c.createCRD(t, "example.com", "widgets", "Widget")
	widgets = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	c.createNamespace(t, "app")
	obj := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]interface{}{"name": "w1", "namespace": "app", "finalizers": []interface{}{"example.com/cleanup"}}}}
	waitFor(t, 30*time.Second, "create widget w1", func() error {
		_, err := c.dyn.Resource(widgets).Namespace("app").Create(ctx, obj, metav1.CreateOptions{})
		return created(err)
	})
	apiKey = c.createAggregatedAPI(t, "metrics.k8s.io", "v1beta1", "kube-system", "metrics-server", nil)
	c.waitAPIServiceReason(t, "v1beta1.metrics.k8s.io", "ServiceNotFound")
	waitFor(t, 30*time.Second, "discovery of metrics.k8s.io to fail", func() error {
		if _, err := c.kube.Discovery().ServerResourcesForGroupVersion("metrics.k8s.io/v1beta1"); err == nil {
			return errString("metrics.k8s.io discovered")
		}
		return nil
	})
	// No namespace controller runs yet: the namespace is Terminating and
	// the widget is not being deleted.
	mustNoErr(t, "delete namespace app", c.kube.CoreV1().Namespaces().Delete(ctx, "app", metav1.DeleteOptions{}))
	return widgets, apiKey
}

// waitWidgetDeleting waits until the namespace controller has deleted
// widget w1 (its finalizer holds it).
func waitWidgetDeleting(t *testing.T, c *cluster, widgets schema.GroupVersionResource) {
	t.Helper()
	waitFor(t, 90*time.Second, "the widget to be deleting", func() error {
		u, err := c.dyn.Resource(widgets).Namespace("app").Get(context.Background(), "w1", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if u.GetDeletionTimestamp() == nil {
			return errString("no deletionTimestamp yet")
		}
		return nil
	})
}

// TestUnstickYesNeverAnswersWhatItRevealed: TestUnstickAsksAgain's
// namespace, unstick run with --yes and stdin not a terminal. --yes
// confirms the plan shown (the APIService); the widget the first step reveals was never shown,
// so nobody answered for it: unstick stops with only the APIService
// deleted, saying what to run. A crashed regghost's etcd lock holds the run
// between its analysis and its first write (it waits the lease out) while
// the namespace controller starts and deletes the widget; the lease then
// ends.
func TestUnstickYesNeverAnswersWhatItRevealed(t *testing.T) {
	c := startCluster(t, clusterOptions{})
	ctx := context.Background()
	widgets, apiKey := heldByAPIServiceAndAWidget(t, c)

	// A regghost of this host that is no longer running left the lock on
	// a lease nobody renews.
	dead := exec.Command("true")
	mustNoErr(t, "run true", dead.Run())
	host, _ := os.Hostname()
	// Its lease outlasts anything the test waits for; the test ends it
	// (as its expiry would) once the widget is deleting.
	session, err := concurrency.NewSession(c.etcd, concurrency.WithTTL(300))
	mustNoErr(t, "lock session", err)
	mustNoErr(t, "take the lock", concurrency.NewMutex(session, etcdwrite.LockPrefix).TryLock(ctx))
	_, err = c.etcd.Put(ctx, etcdwrite.LockHolderKey, etcdwrite.Holder{What: "regghost purge namespace other", PID: dead.Process.Pid, Host: host, Since: time.Now()}.String(), clientv3.WithLease(session.Lease()))
	mustNoErr(t, "write the holder", err)
	session.Orphan()
	before := c.state(t)

	root := filepath.Join(t.TempDir(), "backups")
	cmd := exec.Command(bins.regghost, append([]string{"unstick", "namespace", "app", "--confirm", "--yes", "--backup-dir", root, "--kubeconfig", c.kubeconfig}, c.etcdArgs()...)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "KUBECONFIG=")
	var out, errOut lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	mustNoErr(t, "start unstick", cmd.Start())
	waitFor(t, 30*time.Second, "unstick to wait for the lock", func() error {
		if !strings.Contains(oneLine(errOut.String()), "which is no longer running; waiting up to") {
			return errString("not waiting yet")
		}
		return nil
	})
	c.startControllerManager(t, "namespace-controller")
	waitWidgetDeleting(t, c, widgets)
	_, err = c.etcd.Revoke(ctx, session.Lease())
	mustNoErr(t, "end the dead holder's lease", err)
	err = cmd.Wait()
	code := cmd.ProcessState.ExitCode()
	all := strings.Join(strings.Fields(out.String()+errOut.String()), " ")
	const w1 = "/registry/example.com/widgets/app/w1"
	if code == 0 || !strings.Contains(all, w1+": remove example.com/cleanup") || !strings.Contains(all, "run `regghost unstick namespace app` to review them") ||
		!strings.Contains(all, "--yes confirms only the plan that was shown") {
		t.Fatalf("--yes answered what the plan did not show: exit %d (%v):\n%s", code, err, all)
	}
	u, err := c.dyn.Resource(widgets).Namespace("app").Get(ctx, "w1", metav1.GetOptions{})
	if err != nil || len(u.GetFinalizers()) != 1 {
		t.Fatalf("the widget lost its finalizer without a yes: %v %v", err, u)
	}
	// The namespace controller's writes (the widget's deletion, the
	// namespace's conditions, its events) and the locks' are the others';
	// of unstick, only the APIService and its nudge.
	others := []string{apiKey, "/registry/namespaces/app", w1}
	for _, st := range []etcdState{before, c.state(t)} {
		for k := range st.kvs {
			if strings.HasPrefix(k, "/registry/events/") || strings.HasPrefix(k, etcdwrite.LockPrefix) || k == etcdwrite.LockHolderKey {
				others = append(others, k)
			}
		}
	}
	c.assertChangedOnly(t, "unstick --yes", before, others)
	if c.value(t, apiKey) != nil {
		t.Error("the confirmed APIService deletion did not happen")
	}
}

// heldByItsOwnFinalizers makes namespace name with the custom spec
// finalizer example.com/gone (and metadata finalizers meta), a ConfigMap in
// it, deletes it, and waits until the namespace controller has done all it
// can: only the custom finalizers hold it.
func (c *cluster) heldByItsOwnFinalizers(t *testing.T, name string, meta []string) {
	t.Helper()
	ctx := context.Background()
	_, err := c.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: meta},
		Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"kubernetes", "example.com/gone"}}}, metav1.CreateOptions{})
	mustNoErr(t, "create namespace", err)
	c.createConfigMap(t, name, "plain")
	mustNoErr(t, "delete namespace", c.kube.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}))
	waitFor(t, 60*time.Second, "the namespace controller to be done with "+name, func() error {
		ns, err := c.kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(ns.Spec.Finalizers) != 1 {
			return errString("finalizers " + fmt.Sprint(ns.Spec.Finalizers))
		}
		return nil
	})
}
