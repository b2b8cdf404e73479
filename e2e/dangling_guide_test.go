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

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kubectlShown runs the real kubectl as the cluster's admin and returns
// what a person sees (stdout and stderr) and its exit code; a failure is
// part of the story, not of the test.
func (c *cluster) kubectlShown(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(binsFor(t).kubectl, append([]string{"--kubeconfig", c.kubeconfig}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	} else if err != nil {
		t.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
	}
	return string(out), 0
}

// TestDanglingReferencesGuide plays the dangling-references guide: an
// adapter uninstalled half-way (the Service metrics/metrics-server deleted,
// its APIService left) and a validating webhook configuration policy-guard
// (failurePolicy Fail, every ConfigMap create) left calling a Service in a
// namespace policy that is gone. A ConfigMap create fails, a namespace
// deletion hangs; scan names both, dangling's dry run says the fixes, and
// dangling --confirm on a terminal makes them behind a backup, changing
// only those two keys; the create then works. Each output is the guide's.
func TestDanglingReferencesGuide(t *testing.T) {
	parallel(t)
	c := startCluster(t, clusterOptions{})
	c.startControllerManager(t, "namespace-controller", "garbage-collector-controller")
	ctx := context.Background()

	c.createNamespace(t, "metrics")
	c.createHeadlessService(t, "metrics", "metrics-server")
	apiName := "v1beta1.custom.metrics.example.com"
	apiKey := c.createAggregatedAPI(t, "custom.metrics.example.com", "v1beta1", "metrics", "metrics-server", nil)
	mustNoErr(t, "delete service metrics/metrics-server", c.kube.CoreV1().Services("metrics").Delete(ctx, "metrics-server", metav1.DeleteOptions{}))
	c.waitAPIServiceReason(t, apiName, "ServiceNotFound")

	c.createNamespace(t, "policy")
	c.createHeadlessService(t, "policy", "policy-webhook")
	fail, none := admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone
	path, timeout := "/validate", int32(10)
	_, err := c.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "policy-guard"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "validate.policy.example.com",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "policy", Name: "policy-webhook", Path: &path}},
			Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}},
			FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}, TimeoutSeconds: &timeout}},
	}, metav1.CreateOptions{})
	mustNoErr(t, "create ValidatingWebhookConfiguration policy-guard", err)
	// The policy engine's namespace went the hard way, its Service with it.
	c.forceDelete(t, "/registry/services/specs/policy/policy-webhook")
	c.forceDelete(t, "/registry/namespaces/policy")
	const hookKey = "/registry/validatingwebhookconfigurations/policy-guard"

	var shown []string
	waitFor(t, 60*time.Second, "a ConfigMap create to fail calling the webhook", func() error {
		out, code := c.kubectlShown(t, "-n", "default", "create", "configmap", "app-config", "--from-literal=a=b")
		if code == 0 || !strings.Contains(out, "failed calling webhook") {
			if code == 0 {
				c.kubectl(t, "", "-n", "default", "delete", "configmap", "app-config")
			}
			return fmt.Errorf("kubectl create: exit %d: %s", code, out)
		}
		shown = append(shown, "$ kubectl -n default create configmap app-config --from-literal=a=b", strings.TrimSpace(out))
		return nil
	})
	c.createNamespace(t, "shop")
	out, _ := c.kubectlShown(t, "delete", "namespace", "shop", "--wait=false")
	shown = append(shown, "", "$ kubectl delete namespace shop --wait=false", strings.TrimSpace(out))
	c.waitDiscoveryFailure(t, "shop")
	out, _ = c.kubectlShown(t, "get", "apiservice", apiName)
	shown = append([]string{"$ kubectl get apiservice " + apiName, strings.TrimSpace(out), ""}, shown...)
	out, _ = c.kubectlShown(t, "get", "namespace", "shop")
	shown = append(shown, "$ kubectl get namespace shop", strings.TrimSpace(out))
	checkCapture(t, "kubectl-before", 0, strings.Join(shown, "\n"))

	scanOut, scanErr, code := c.regghost(t, "", "scan")
	checkCapture(t, "scan", code, scanErr, scanOut)
	if code != 3 {
		t.Errorf("scan: exit %d, want 3 (a reference whose target is gone)", code)
	}
	before := c.state(t)
	dryOut, dryErr, code := c.regghost(t, "", "dangling")
	checkCapture(t, "dry-run", code, dryErr, dryOut)
	if code != 3 || !strings.Contains(dryOut, "delete APIService "+apiName) || !strings.Contains(dryOut, "delete ValidatingWebhookConfiguration policy-guard") {
		t.Fatalf("dangling: exit %d: %s\n%s", code, dryErr, dryOut)
	}
	c.assertChangedOnly(t, "the dangling dry run", before, c.keysUnder(t, "shop"))

	root := filepath.Join(shortTempDir(t), "backups")
	before = c.state(t)
	run := onTerminalInteractive(t, append([]string{"dangling", "--confirm", "--backup-dir", root, "--kubeconfig", c.kubeconfig}, c.etcdArgs()...)...)
	plan := run.question(t)
	run.answer(t, "yes")
	rest, code := run.wait(t)
	// The plan is the dry run's; the guide shows the question on.
	question := plan[strings.LastIndex(plan, "\n")+1:]
	if code != 0 {
		t.Fatalf("dangling --confirm: exit %d:\n%s%s", code, plan, rest)
	}
	// Namespace shop finishes once the APIService is gone: its keys go too.
	waitFor(t, 90*time.Second, "namespace shop to finish", func() error {
		if c.value(t, "/registry/namespaces/shop") != nil {
			return errString("namespace shop is still there")
		}
		return nil
	})
	changed := append(append(c.keysUnder(t, "shop"), keysOf(before, "shop")...), apiKey, hookKey)
	c.assertChangedOnly(t, "dangling --confirm", before, changed)
	out, kcode := c.kubectlShown(t, "-n", "default", "create", "configmap", "app-config", "--from-literal=a=b")
	if kcode != 0 {
		t.Errorf("kubectl create after the fix: exit %d: %s", kcode, out)
	}
	checkCapture(t, "confirm", code, "…", question+rest, "\n$ kubectl -n default create configmap app-config --from-literal=a=b\n"+out)
}
