package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/regghost/regghost/pkg/recovery"
)

// recoverPlan runs recover with -o wide (every cell whole) and returns
// each object's action and detail from the table.
func (c *cluster) recoverPlan(t *testing.T, args ...string) (map[string]recovery.Verdict, string, int) {
	t.Helper()
	out, errOut, code := c.regghost(t, "", append(append([]string{"recover"}, args...), "-o", "wide")...)
	m := map[string]recovery.Verdict{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || !strings.HasPrefix(f[0], "/registry/") {
			continue
		}
		m[f[0]] = recovery.Verdict{Action: recovery.Action(f[1]), Detail: strings.Join(f[2:], " ")}
	}
	if len(m) == 0 {
		t.Fatalf("recover %v: exit %d, no plan in:\n%s\n%s", args, code, out, errOut)
	}
	return m, errOut, code
}

func (c *cluster) absent(t *testing.T, key string) bool {
	t.Helper()
	resp, err := c.etcd.Get(context.Background(), key)
	mustNoErr(t, "get "+key, err)
	return len(resp.Kvs) == 0
}

// TestRecoverFromSnapshot is issue 20's acceptance on the real servers: a
// Secret (encrypted at rest) and a ConfigMap deleted through the API come
// back from a snapshot byte-identical while an object changed since keeps
// its new state; a CRD deleted with its custom resources comes back with
// them and is served; a recover into a namespace deleted since is refused;
// a Pod that would start again is refused until accepted; the YAML output
// applies with kubectl --dry-run=server; restore undoes a recovery.
func TestRecoverFromSnapshot(t *testing.T) {
	parallel(t)
	encPath := filepath.Join(t.TempDir(), "encryption.yaml")
	mustNoErr(t, "write encryption config", os.WriteFile(encPath, []byte(encryptionConfig), 0o600))
	c := startCluster(t, clusterOptions{apiserverArgs: []string{"--encryption-provider-config", encPath}})
	c.startControllerManager(t, "namespace-controller", "garbage-collector-controller")
	ctx := context.Background()
	c.createNamespace(t, "shop")
	c.createNamespace(t, "doomed")
	c.createSecret(t, "shop", "db")
	c.createConfigMap(t, "shop", "settings")
	c.createConfigMap(t, "shop", "changed")
	c.createConfigMap(t, "doomed", "c1")
	c.createPod(t, "shop", "p1")
	c.createCRD(t, "example.com", "widgets", "Widget")
	c.createCR(t, "example.com", "widgets", "Widget", "shop", "w1")
	c.createCR(t, "example.com", "widgets", "Widget", "shop", "w2")
	const (
		secretKey  = "/registry/secrets/shop/db"
		settingKey = "/registry/configmaps/shop/settings"
		changedKey = "/registry/configmaps/shop/changed"
		podKey     = "/registry/pods/shop/p1"
		crdKey     = "/registry/apiextensions.k8s.io/customresourcedefinitions/widgets.example.com"
		w1Key      = "/registry/example.com/widgets/shop/w1"
		w2Key      = "/registry/example.com/widgets/shop/w2"
	)
	if v := c.value(t, secretKey); !bytes.HasPrefix(v, []byte("k8s:enc:aescbc:v1:key1:")) {
		t.Fatalf("secrets are not encrypted at rest: %q", v[:min(len(v), 30)])
	}
	before := map[string][]byte{}
	for _, k := range []string{secretKey, settingKey, crdKey, w1Key, w2Key} {
		before[k] = c.value(t, k)
	}
	snap := filepath.Join(t.TempDir(), "before.db")
	if out, errOut, code := c.regghost(t, "", "snapshot", "save", snap); code != 0 {
		t.Fatalf("snapshot save: exit %d: %s %s", code, out, errOut)
	}

	revResp, err := c.etcd.Get(ctx, "x")
	mustNoErr(t, "read the revision", err)
	snapRev := revResp.Header.Revision

	// The incident: deletes through the API, and a change made since.
	mustNoErr(t, "delete secret", c.kube.CoreV1().Secrets("shop").Delete(ctx, "db", metav1.DeleteOptions{}))
	mustNoErr(t, "delete configmap", c.kube.CoreV1().ConfigMaps("shop").Delete(ctx, "settings", metav1.DeleteOptions{}))
	mustNoErr(t, "delete pod", c.kube.CoreV1().Pods("shop").Delete(ctx, "p1", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}))
	cm, err := c.kube.CoreV1().ConfigMaps("shop").Get(ctx, "changed", metav1.GetOptions{})
	mustNoErr(t, "get configmap", err)
	cm.Data = map[string]string{"new": "state"}
	_, err = c.kube.CoreV1().ConfigMaps("shop").Update(ctx, cm, metav1.UpdateOptions{})
	mustNoErr(t, "update configmap", err)
	changedNow := c.value(t, changedKey)
	mustNoErr(t, "delete CRD", c.dyn.Resource(crdGVR).Delete(ctx, "widgets.example.com", metav1.DeleteOptions{}))
	mustNoErr(t, "delete namespace", c.kube.CoreV1().Namespaces().Delete(ctx, "doomed", metav1.DeleteOptions{}))
	waitFor(t, 90*time.Second, "the CRD, its custom resources and namespace doomed gone", func() error {
		for _, k := range []string{crdKey, w1Key, w2Key, "/registry/namespaces/doomed", "/registry/configmaps/doomed/c1", podKey} {
			if !c.absent(t, k) {
				return errorString(k + " still there")
			}
		}
		return nil
	})
	root := filepath.Join(t.TempDir(), "backups")
	src := []string{"--snapshot", snap, "--encryption-provider-config", encPath, "--backup-dir", root}
	rec := func(args ...string) []string { return append(append([]string{"recover"}, src...), args...) }

	t.Run("dry run judges every object of the namespace", func(t *testing.T) {
		out, errOut, code := c.regghost(t, "", rec("-n", "shop")...)
		checkCapture(t, "dry-run", code, asShown(out, errOut, code)...)
		got, errOut, code := c.recoverPlan(t, append(src, "-n", "shop")...)
		if code != 1 {
			t.Errorf("exit %d (%s), want 1: the pod and the custom resources are refused", code, errOut)
		}
		want := map[string]recovery.Action{secretKey: recovery.Recover, settingKey: recovery.Recover, changedKey: recovery.Exists,
			podKey: recovery.Refused, w1Key: recovery.Refused, w2Key: recovery.Refused}
		for k, a := range want {
			if got[k].Action != a {
				t.Errorf("%s: %s (%s), want %s", k, got[k].Action, got[k].Detail, a)
			}
		}
		if d := got[podKey].Detail; !strings.Contains(d, string(recovery.ContainersStarted)) {
			t.Errorf("pod refused for %q, want %s", d, recovery.ContainersStarted)
		}
		if d := got[w1Key].Detail; !strings.Contains(d, "CustomResourceDefinition widgets.example.com does not exist") {
			t.Errorf("custom resource refused for %q, want its CRD missing", d)
		}
		if !c.absent(t, secretKey) || !c.absent(t, settingKey) {
			t.Error("a dry run wrote")
		}
	})

	t.Run("a zipped k3s snapshot is a source too", func(t *testing.T) {
		base := fmt.Sprintf("etcd-snapshot-cp-1-%d", time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC).Unix())
		zipped := filepath.Join(t.TempDir(), base+".zip")
		zipOne(t, zipped, base, snap)
		out, errOut, code := c.regghost(t, "", "recover", "--snapshot", zipped, "--encryption-provider-config", encPath, secretKey, "-o", "wide")
		if code != 0 || !strings.Contains(out, secretKey+"  recover") || !strings.Contains(errOut, "2026-12-03T10:00:00Z") {
			t.Errorf("exit %d: %s\n%s", code, out, errOut)
		}
	})
	t.Run("an older revision of the live etcd is a source too", func(t *testing.T) {
		got, errOut, code := c.recoverPlan(t, "--rev", fmt.Sprint(snapRev), "--encryption-provider-config", encPath, "-n", "shop", "--resource", "secrets")
		if code != 0 || got[secretKey].Action != recovery.Recover {
			t.Errorf("exit %d (%s): %+v, want the secret recovered", code, errOut, got)
		}
	})

	var secretBackup string
	t.Run("secret and configmap come back byte-identical, the changed one keeps its state", func(t *testing.T) {
		out, errOut, code := c.regghost(t, "", rec("-n", "shop", "--resource", "secrets", "--name", "db", "--confirm", "--yes")...)
		if code != 0 {
			t.Fatalf("recover secret: exit %d: %s\n%s", code, errOut, out)
		}
		secretBackup = backupFrom(t, out)
		t.Logf("recover secret:\n%s", out)
		out, errOut, code = c.regghost(t, "", rec("-n", "shop", "--resource", "configmap", "--confirm", "--yes")...)
		if code != 0 {
			t.Fatalf("recover configmaps: exit %d: %s\n%s", code, errOut, out)
		}
		for _, k := range []string{secretKey, settingKey} {
			if !bytes.Equal(c.value(t, k), before[k]) {
				t.Errorf("%s is not byte-identical to the snapshot", k)
			}
		}
		if !bytes.Equal(c.value(t, changedKey), changedNow) {
			t.Error("the configmap changed since the snapshot was overwritten")
		}
		s, err := c.kube.CoreV1().Secrets("shop").Get(ctx, "db", metav1.GetOptions{})
		if err != nil || string(s.Data["password"]) != "hunter2" {
			t.Errorf("the API server does not read the recovered secret: %v", err)
		}
	})

	t.Run("a CRD comes back with its custom resources, served", func(t *testing.T) {
		out, errOut, code := c.regghost(t, "", rec(crdKey, "--confirm", "--yes")...)
		if code != 0 {
			t.Fatalf("recover CRD: exit %d: %s\n%s", code, errOut, out)
		}
		for _, k := range []string{crdKey, w1Key, w2Key} {
			if !bytes.Equal(c.value(t, k), before[k]) {
				t.Errorf("%s is not byte-identical to the snapshot", k)
			}
		}
		gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
		waitFor(t, 30*time.Second, "widget w1 served", func() error {
			_, err := c.dyn.Resource(gvr).Namespace("shop").Get(ctx, "w1", metav1.GetOptions{})
			return err
		})
	})

	t.Run("a namespace deleted since is refused", func(t *testing.T) {
		got, errOut, code := c.recoverPlan(t, append(src, "-n", "doomed", "--confirm", "--yes")...)
		if code != 1 || !strings.Contains(errOut, "refused") {
			t.Errorf("exit %d, stderr %q: want 1 and the refusal", code, errOut)
		}
		if v := got["/registry/configmaps/doomed/c1"]; v.Action != recovery.Refused || !strings.Contains(v.Detail, "namespace doomed does not exist") {
			t.Errorf("doomed/c1: %s (%s), want refused: namespace missing", v.Action, v.Detail)
		}
		if !c.absent(t, "/registry/configmaps/doomed/c1") {
			t.Error("written into a missing namespace")
		}
	})

	t.Run("a pod that would start again is refused until accepted", func(t *testing.T) {
		out, errOut, code := c.regghost(t, "", rec(podKey, "--confirm", "--yes")...)
		if code != 1 || !c.absent(t, podKey) {
			t.Fatalf("exit %d, want 1 and the pod not written: %s\n%s", code, errOut, out)
		}
		t.Logf("pod refused:\n%s%s", out, errOut)
		out, errOut, code = c.regghost(t, "", rec(podKey, "--accept-impact", string(recovery.ContainersStarted), "--confirm", "--yes")...)
		if code != 0 {
			t.Fatalf("accepted: exit %d: %s\n%s", code, errOut, out)
		}
		if _, err := c.kube.CoreV1().Pods("shop").Get(ctx, "p1", metav1.GetOptions{}); err != nil {
			t.Errorf("recovered pod not served: %v", err)
		}
	})

	t.Run("yaml applies with kubectl --dry-run=server", func(t *testing.T) {
		// A server dry run creates nothing, so a namespace and its objects
		// are applied apart.
		for _, args := range [][]string{{"/registry/namespaces/doomed"}, {"-n", "shop"}} {
			out, errOut, code := c.regghost(t, "", append([]string{"recover", "--snapshot", snap, "--encryption-provider-config", encPath, "-o", "yaml"}, args...)...)
			if code != 0 || !strings.Contains(out, "kind: List") {
				t.Fatalf("recover -o yaml %v: exit %d: %s\n%s", args, code, errOut, out)
			}
			if strings.Contains(out, "resourceVersion") || strings.Contains(out, "uid:") {
				t.Errorf("server-set fields left in the manifests:\n%s", out)
			}
			if strings.Contains(out, "items: []") {
				// Everything of shop was recovered above: the manifests
				// carry the verdicts, so nothing is left to apply, and each
				// object left out is said.
				if !strings.Contains(errOut, "left out") {
					t.Errorf("nothing says what was left out: %s", errOut)
				}
				continue
			}
			cmd := exec.Command(binsFor(t).kubectl, "--kubeconfig", c.kubeconfig, "apply", "--dry-run=server", "-f", "-")
			cmd.Stdin = strings.NewReader(out)
			if res, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("kubectl apply --dry-run=server %v: %v\n%s\n%s", args, err, res, out)
			}
		}
	})

	t.Run("restore undoes a recovery", func(t *testing.T) {
		out, _, _ := c.regghost(t, "", "restore", secretBackup)
		t.Logf("undo dry run:\n%s", out)
		out, errOut, code := c.regghost(t, "", "restore", secretBackup, "--confirm", "--yes")
		if code != 0 {
			t.Fatalf("restore: exit %d: %s\n%s", code, errOut, out)
		}
		if !c.absent(t, secretKey) {
			t.Error("the recovered secret is still there")
		}
		if _, err := c.kube.CoreV1().Secrets("shop").Get(ctx, "db", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("secret still served: %v", err)
		}
	})
}

type errorString string

func (e errorString) Error() string { return string(e) }

// backupFrom finds the backup directory a confirmed run printed.
func backupFrom(t *testing.T, out string) string {
	t.Helper()
	for _, f := range strings.Fields(out) {
		if strings.Contains(f, string(filepath.Separator)+"backups"+string(filepath.Separator)) {
			return strings.TrimRight(f, ";,.")
		}
	}
	t.Fatalf("no backup directory in:\n%s", out)
	return ""
}
