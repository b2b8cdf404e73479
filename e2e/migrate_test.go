package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	corev1 "k8s.io/api/core/v1"

	"github.com/regghost/regghost/pkg/decode"
)

// oneLine is s with every run of spaces and line breaks as one space: what
// the output says, however it was wrapped to the terminal.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// versionedCRD is a namespaced CRD plural.group listing versions, each
// served, the one named storage its storage version.
func versionedCRD(group, plural, kind, storage string, versions ...string) *unstructured.Unstructured {
	var vs []any
	for _, v := range versions {
		vs = append(vs, map[string]any{"name": v, "served": true, "storage": v == storage,
			"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}})
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": plural + "." + group},
		"spec": map[string]any{"group": group, "scope": "Namespaced",
			"names":    map[string]any{"plural": plural, "singular": strings.ToLower(kind), "kind": kind, "listKind": kind + "List"},
			"versions": vs},
	}}
}

// setCRD changes the CRD name with edit, read again on a conflict.
func (c *cluster) setCRD(t *testing.T, name string, edit func(u *unstructured.Unstructured), status bool) {
	t.Helper()
	waitFor(t, 30*time.Second, "update CRD "+name, func() error {
		u, err := c.dyn.Resource(crdGVR).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		edit(u)
		if status {
			_, err = c.dyn.Resource(crdGVR).UpdateStatus(context.Background(), u, metav1.UpdateOptions{})
		} else {
			_, err = c.dyn.Resource(crdGVR).Update(context.Background(), u, metav1.UpdateOptions{})
		}
		return err
	})
}

// storeAt makes storage the CRD's storage version, and waits until a new
// object is stored at it in etcd.
func (c *cluster) storeAt(t *testing.T, group, plural, kind, storage string) {
	t.Helper()
	c.setCRD(t, plural+"."+group, func(u *unstructured.Unstructured) {
		vs, _, _ := unstructured.NestedSlice(u.Object, "spec", "versions")
		for _, v := range vs {
			m := v.(map[string]any)
			m["storage"] = m["name"] == storage
		}
		_ = unstructured.SetNestedSlice(u.Object, vs, "spec", "versions")
	}, false)
	gvr := schema.GroupVersionResource{Group: group, Version: storage, Resource: plural}
	waitFor(t, 60*time.Second, plural+" stored at "+storage, func() error {
		probe := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/" + storage, "kind": kind,
			"metadata": map[string]any{"generateName": "probe-", "namespace": "default"}}}
		got, err := c.dyn.Resource(gvr).Namespace("default").Create(context.Background(), probe, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		defer c.dyn.Resource(gvr).Namespace("default").Delete(context.Background(), got.GetName(), metav1.DeleteOptions{})
		if at := storedAPIVersion(t, c.value(t, "/registry/"+group+"/"+plural+"/default/"+got.GetName())); at != group+"/"+storage {
			return fmt.Errorf("stored at %s", at)
		}
		return nil
	})
}

func storedAPIVersion(t *testing.T, value []byte) string {
	t.Helper()
	m, err := decode.Meta(value)
	mustNoErr(t, "decode", err)
	return m.APIVersion
}

// storedVersions counts the values under prefix per stored apiVersion.
func (c *cluster) storedVersions(t *testing.T, prefix string) map[string]int {
	t.Helper()
	resp, err := c.etcd.Get(context.Background(), prefix, clientv3.WithPrefix())
	mustNoErr(t, "read "+prefix, err)
	out := map[string]int{}
	for _, kv := range resp.Kvs {
		out[storedAPIVersion(t, kv.Value)]++
	}
	return out
}

func keysUnderPrefix(t *testing.T, c *cluster, prefix string) []string {
	t.Helper()
	resp, err := c.etcd.Get(context.Background(), prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	mustNoErr(t, "read "+prefix, err)
	var keys []string
	for _, kv := range resp.Kvs {
		keys = append(keys, string(kv.Key))
	}
	return keys
}

// TestMigrateStoredVersionsWhileAClientWrites: a CRD moved from v1beta1 to
// v1 storage with 1,000 objects at v1beta1, while a client keeps updating
// 50 of them: the dry run counts and changes nothing; the confirmed run
// rewrites them through the API server, counts 0 at v1beta1 from etcd, and
// narrows status.storedVersions to [v1]; no update of the client is lost,
// and only the widgets and the CRD changed in etcd.
func TestMigrateStoredVersionsWhileAClientWrites(t *testing.T) {
	parallel(t)
	c := startCluster(t, clusterOptions{})
	ctx := context.Background()
	const group, plural, kind, objects, busy = "example.com", "gadgets", "Gadget", 1000, 50
	// The CRD is kubectl apply'd, as a chart or a GitOps tool would.
	c.kubectl(t, crdManifest(t, versionedCRD(group, plural, kind, "v1beta1", "v1beta1", "v1")), "apply", "-f", "-")
	c.createNamespace(t, "fleet")
	old := schema.GroupVersionResource{Group: group, Version: "v1beta1", Resource: plural}
	waitFor(t, 60*time.Second, "gadgets served", func() error {
		_, err := c.dyn.Resource(old).Namespace("fleet").List(ctx, metav1.ListOptions{})
		return err
	})
	var wg sync.WaitGroup
	errs := make(chan error, objects)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < objects; i += 8 {
				u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/v1beta1", "kind": kind,
					"metadata": map[string]any{"name": fmt.Sprintf("g-%04d", i), "namespace": "fleet"},
					"spec":     map[string]any{"counter": int64(0), "payload": strings.Repeat("x", 2048)}}}
				if _, err := c.dyn.Resource(old).Namespace("fleet").Create(ctx, u, metav1.CreateOptions{}); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("create gadget: %v", err)
	}
	c.storeAt(t, group, plural, kind, "v1")
	prefix := "/registry/" + group + "/" + plural + "/"
	if got := c.storedVersions(t, prefix); got[group+"/v1beta1"] != objects {
		t.Fatalf("stored before the migration: %v", got)
	}

	// The upgrade that drops v1beta1 is refused: the CRD still records it.
	upgrade := filepath.Join(t.TempDir(), "gadgets-crd.yaml")
	mustNoErr(t, "write the new CRD", os.WriteFile(upgrade, []byte(crdManifest(t, versionedCRD(group, plural, kind, "v1", "v1"))), 0o600))
	before := c.state(t)
	shown, code := c.kubectlShown(t, "apply", "-f", upgrade)
	if code == 0 || !strings.Contains(shown, `status.storedVersions[0]: Invalid value: "v1beta1"`) {
		t.Fatalf("kubectl apply of the CRD without v1beta1: exit %d\n%s", code, shown)
	}
	checkCapture(t, "upgrade-refused", code, shown)
	c.assertUnchanged(t, "kubectl apply refused", before)

	out, errOut, code := c.regghost(t, "", "migrate", plural+"."+group)
	if code != 3 || !strings.Contains(oneLine(out), "1000 objects to rewrite:") || !strings.Contains(oneLine(out), "Re-run with --confirm") {
		t.Fatalf("dry run: exit %d\n%s\n%s", code, out, errOut)
	}
	c.assertUnchanged(t, "migrate (dry run)", before)
	checkCapture(t, "dry-run", code, out, errOut)

	// The client: read, bump spec.counter, update with the resourceVersion
	// read; a conflict is read again. last holds what it wrote last.
	cur := schema.GroupVersionResource{Group: group, Version: "v1", Resource: plural}
	stop := make(chan struct{})
	last := make([]int64, busy)
	var updates, conflicts int
	done := make(chan struct{})
	go func() {
		defer close(done)
		for n := int64(1); ; n++ {
			for i := range busy {
				select {
				case <-stop:
					return
				default:
				}
				r := c.dyn.Resource(cur).Namespace("fleet")
				u, err := r.Get(ctx, fmt.Sprintf("g-%04d", i*(objects/busy)), metav1.GetOptions{})
				if err != nil {
					continue
				}
				_ = unstructured.SetNestedField(u.Object, n, "spec", "counter")
				if _, err := r.Update(ctx, u, metav1.UpdateOptions{}); err == nil {
					last[i] = n
					updates++
				} else if apierrors.IsConflict(err) {
					conflicts++
				}
			}
		}
	}()
	out, errOut, code = c.regghost(t, "", "migrate", plural+"."+group, "--confirm", "--yes", "--max-objects-per-second", "400")
	close(stop)
	<-done
	t.Logf("migrate:\n%s\n%s\nthe client: %d updates, %d conflicts", out, errOut, updates, conflicts)
	checkCapture(t, "confirm", code, out, errOut)
	if code != 0 {
		t.Fatalf("migrate --confirm: exit %d", code)
	}
	for _, want := range []string{"0 objects of gadgets.example.com stored at example.com/v1beta1",
		"status.storedVersions of CustomResourceDefinition gadgets.example.com may now be [v1] (it is [v1beta1, v1]): re-run with --prune-stored-versions --confirm"} {
		if !strings.Contains(oneLine(out), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(out, "Dry run") {
		t.Error("the confirmed run says it is a dry run")
	}
	if updates == 0 {
		t.Fatal("the client wrote nothing during the migration")
	}
	if got := c.storedVersions(t, prefix); len(got) != 1 || got[group+"/v1"] != objects {
		t.Errorf("stored after the migration: %v", got)
	}
	for i := range busy {
		u, err := c.dyn.Resource(cur).Namespace("fleet").Get(ctx, fmt.Sprintf("g-%04d", i*(objects/busy)), metav1.GetOptions{})
		mustNoErr(t, "read gadget", err)
		if n, _, _ := unstructured.NestedInt64(u.Object, "spec", "counter"); n != last[i] {
			t.Errorf("gadget %d: counter %d, the client last wrote %d: an update was lost", i, n, last[i])
		}
	}
	c.assertChangedOnly(t, "migrate", before, keysUnderPrefix(t, c, prefix))

	// The proof lets status.storedVersions go to [v1]: that alone is written.
	crdKey := "/registry/apiextensions.k8s.io/customresourcedefinitions/" + plural + "." + group
	before = c.state(t)
	out, errOut, code = c.regghost(t, "", "migrate", plural+"."+group, "--confirm", "--yes", "--prune-stored-versions")
	if code != 0 || !strings.Contains(oneLine(out), "Narrowed status.storedVersions of CustomResourceDefinition gadgets.example.com from [v1beta1, v1] to [v1]") {
		t.Errorf("prune: exit %d\n%s\n%s", code, out, errOut)
	}
	checkCapture(t, "prune", code, out, errOut)
	crd, err := c.dyn.Resource(crdGVR).Get(ctx, plural+"."+group, metav1.GetOptions{})
	mustNoErr(t, "read CRD", err)
	if sv, _, _ := unstructured.NestedStringSlice(crd.Object, "status", "storedVersions"); fmt.Sprint(sv) != "[v1]" {
		t.Errorf("storedVersions %v", sv)
	}
	c.assertChangedOnly(t, "migrate --prune-stored-versions", before, []string{crdKey})

	// The CRD was backed up first: restore puts status.storedVersions back.
	m := regexp.MustCompile("Backed up CustomResourceDefinition gadgets.example.com in (\\S+):").FindStringSubmatch(oneLine(out))
	if m == nil {
		t.Fatalf("the run names no backup of the CRD:\n%s", out)
	}
	before = c.state(t)
	if out, errOut, code := c.regghost(t, "", "restore", m[1], "--confirm", "--yes"); code != 0 {
		t.Fatalf("restore %s: exit %d\n%s\n%s", m[1], code, out, errOut)
	}
	crd, err = c.dyn.Resource(crdGVR).Get(ctx, plural+"."+group, metav1.GetOptions{})
	mustNoErr(t, "read CRD", err)
	if sv, _, _ := unstructured.NestedStringSlice(crd.Object, "status", "storedVersions"); fmt.Sprint(sv) != "[v1beta1 v1]" {
		t.Errorf("storedVersions after the restore: %v", sv)
	}
	c.assertChangedOnly(t, "restore of migrate's backup", before, []string{crdKey})

	// Run again: nothing left, nothing written.
	before = c.state(t)
	out, errOut, code = c.regghost(t, "", "migrate", plural+"."+group, "--confirm", "--yes")
	if code != 0 || !strings.Contains(oneLine(out), "Nothing to move") {
		t.Errorf("again: exit %d\n%s\n%s", code, out, errOut)
	}
	c.assertUnchanged(t, "migrate with nothing to move", before)

	// Pruned again (the restore put v1beta1 back), the upgrade goes
	// through, and it changes the CRD alone.
	if out, errOut, code := c.regghost(t, "", "migrate", plural+"."+group, "--confirm", "--yes", "--prune-stored-versions"); code != 0 {
		t.Fatalf("prune again: exit %d\n%s\n%s", code, out, errOut)
	}
	before = c.state(t)
	shown, code = c.kubectlShown(t, "apply", "-f", upgrade)
	if code != 0 {
		t.Fatalf("kubectl apply of the CRD without v1beta1, once pruned: exit %d\n%s", code, shown)
	}
	checkCapture(t, "upgrade", code, shown)
	// The API server's own registration then drops the APIService of the
	// version no longer served.
	apiService := "/registry/apiregistration.k8s.io/apiservices/v1beta1." + group
	waitFor(t, 60*time.Second, "APIService v1beta1."+group+" removed", func() error {
		if _, ok := c.state(t).kvs[apiService]; ok {
			return fmt.Errorf("still there")
		}
		return nil
	})
	c.assertChangedOnly(t, "kubectl apply of the new CRD", before, []string{crdKey, apiService})
}

// crdManifest is u as kubectl reads it (JSON is YAML).
func crdManifest(t *testing.T, u *unstructured.Unstructured) string {
	t.Helper()
	b, err := u.MarshalJSON()
	mustNoErr(t, "encode "+u.GetName(), err)
	return string(b)
}

// TestMigrateStrandedVersion: objects left at v1beta1 after the CRD dropped
// it (storedVersions pruned without migrating: every list fails) are read
// again by listing v1beta1 for the run, rewritten, and the CRD is left
// listing v1 alone, with every object readable.
func TestMigrateStrandedVersion(t *testing.T) {
	parallel(t)
	// Two kube-apiservers, as on an HA control plane: the version listed
	// again is waited for on each, since either may take a rewrite.
	port := freePort(t)
	c := startCluster(t, clusterOptions{apiserverIP: "127.0.0.2", apiserverPort: port, apiserverName: "apiserver-a"})
	second := *c
	second.startAPIServer(t, clusterOptions{apiserverIP: "127.0.0.3", apiserverPort: port, apiserverName: "apiserver-b"})
	c.registerAPIServers(t, port, "127.0.0.2", "127.0.0.3")
	ctx := context.Background()
	const group, plural, kind = "example.com", "widgets", "Widget"
	_, err := c.dyn.Resource(crdGVR).Create(ctx, versionedCRD(group, plural, kind, "v1beta1", "v1beta1", "v1"), metav1.CreateOptions{})
	mustNoErr(t, "create CRD", err)
	c.createNamespace(t, "shop")
	old := schema.GroupVersionResource{Group: group, Version: "v1beta1", Resource: plural}
	for i := range 20 {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/v1beta1", "kind": kind,
			"metadata": map[string]any{"name": fmt.Sprintf("w-%d", i), "namespace": "shop"}, "spec": map[string]any{"size": int64(i)}}}
		waitFor(t, 60*time.Second, "create widget", func() error {
			_, err := c.dyn.Resource(old).Namespace("shop").Create(ctx, u, metav1.CreateOptions{})
			return created(err)
		})
	}
	c.storeAt(t, group, plural, kind, "v1")
	name := plural + "." + group
	// What goes wrong: storedVersions pruned by hand, v1beta1 removed.
	c.setCRD(t, name, func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedStringSlice(u.Object, []string{"v1"}, "status", "storedVersions")
	}, true)
	c.setCRD(t, name, func(u *unstructured.Unstructured) {
		vs, _, _ := unstructured.NestedSlice(u.Object, "spec", "versions")
		_ = unstructured.SetNestedSlice(u.Object, vs[1:], "spec", "versions")
	}, false)
	cur := schema.GroupVersionResource{Group: group, Version: "v1", Resource: plural}
	waitFor(t, 60*time.Second, "the list of widgets fails", func() error {
		if _, err := c.dyn.Resource(cur).Namespace("shop").List(ctx, metav1.ListOptions{}); err == nil {
			return fmt.Errorf("the list still works")
		}
		return nil
	})
	shown, code := c.kubectlShown(t, "get", "widgets", "-A")
	if code == 0 || !strings.Contains(shown, "request to convert CR from an invalid group/version: example.com/v1beta1") {
		t.Fatalf("kubectl get widgets -A: exit %d\n%s", code, shown)
	}
	checkCapture(t, "list-fails", code, shown)

	out, errOut, code := c.regghost(t, "", "migrate", name)
	checkCapture(t, "dry-run", code, out, errOut)
	if code != 3 || !strings.Contains(oneLine(out), "list v1beta1 again in CustomResourceDefinition widgets.example.com") {
		t.Fatalf("dry run: exit %d\n%s\n%s", code, out, errOut)
	}
	before := c.state(t)
	out, errOut, code = c.regghost(t, "", "migrate", name, "--confirm", "--yes", "-v=6")
	t.Logf("migrate:\n%s\n%s", out, errOut)
	checkCapture(t, "confirm", code, out) // stderr is -v=6's requests
	if code != 0 {
		t.Fatalf("migrate --confirm: exit %d", code)
	}
	// The version listed again was read through each kube-apiserver.
	for _, addr := range []string{"127.0.0.2", "127.0.0.3"} {
		if !regexp.MustCompile(`https://` + regexp.QuoteMeta(addr) + `:\d+/apis/example\.com/v1\w*/namespaces/shop/widgets/w-\d+`).MatchString(errOut) {
			t.Errorf("the version listed again was not read through %s", addr)
		}
	}
	for _, want := range []string{"Listed v1beta1 again", "0 objects of widgets.example.com stored at example.com/v1beta1", "Removed v1beta1 again"} {
		if !strings.Contains(oneLine(out), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	crd, err := c.dyn.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
	mustNoErr(t, "read CRD", err)
	vs, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	sv, _, _ := unstructured.NestedStringSlice(crd.Object, "status", "storedVersions")
	if len(vs) != 1 || vs[0].(map[string]any)["name"] != "v1" || fmt.Sprint(sv) != "[v1]" {
		t.Errorf("CRD left with versions %v, storedVersions %v", vs, sv)
	}
	waitFor(t, 60*time.Second, "the list of widgets works", func() error {
		l, err := c.dyn.Resource(cur).Namespace("shop").List(ctx, metav1.ListOptions{})
		if err == nil && len(l.Items) != 20 {
			return fmt.Errorf("%d widgets", len(l.Items))
		}
		return err
	})
	if shown, code := c.kubectlShown(t, "get", "widgets", "-A"); code != 0 || strings.Count(shown, "\nshop ") != 20 {
		t.Errorf("kubectl get widgets -A after the migration: exit %d\n%s", code, shown)
	}
	c.assertChangedOnly(t, "migrate", before, append(keysUnderPrefix(t, c, "/registry/"+group+"/"+plural+"/"), "/registry/apiextensions.k8s.io/customresourcedefinitions/"+name))
}

// probeWrites updates one ConfigMap every 20 ms, for d or while run runs,
// and returns the p99 of the updates' latency.
func (c *cluster) probeWrites(t *testing.T, d time.Duration, run func()) time.Duration {
	t.Helper()
	ctx := context.Background()
	cm, err := c.kube.CoreV1().ConfigMaps("default").Get(ctx, "probe", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		cm, err = c.kube.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: "default"}}, metav1.CreateOptions{})
	}
	mustNoErr(t, "probe configmap", err)
	stop := make(chan struct{})
	var lat []time.Duration
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			cm.Data = map[string]string{"n": strconv.Itoa(i)}
			start := time.Now()
			got, err := c.kube.CoreV1().ConfigMaps("default").Update(ctx, cm, metav1.UpdateOptions{})
			if err == nil {
				lat = append(lat, time.Since(start))
				cm = got
			}
		}
	}()
	if run != nil {
		run()
	} else {
		time.Sleep(d)
	}
	close(stop)
	<-done
	if len(lat) == 0 {
		return 0
	}
	slices.Sort(lat)
	return lat[len(lat)*99/100]
}

// rotatedEncryption writes key2 first, key1 still there to read with.
const rotatedEncryption = `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [secrets]
    providers:
      - aescbc:
          keys:
            - name: key2
              secret: b2xkIGtleSBvbGQga2V5IG9sZCBrZXkgb2xkIGtleSE=
            - name: key1
              secret: c2VjcmV0IGlzIHNlY3VyZSwgb3IgaXMgaXQ/IDEyMzQ=
      - identity: {}
`

// TestMigrateSecretsToANewKey: 10,000 Secrets under key1; the
// configuration rotated to key2 (reloaded by the running kube-apiserver):
// migrate counts them, rewrites them through the API server, counts 0
// under key1 live, names the old revisions still holding key1 and keeps
// key1; once etcd is compacted past them the verdict is "may go".
func TestMigrateSecretsToANewKey(t *testing.T) {
	parallel(t)
	enc := filepath.Join(t.TempDir(), "enc.yaml")
	mustNoErr(t, "write", os.WriteFile(enc, []byte(encryptionConfig), 0o600))
	c := startCluster(t, clusterOptions{apiserverArgs: []string{"--encryption-provider-config", enc, "--encryption-provider-config-automatic-reload=true"}})
	ctx := context.Background()
	// bench/migrate.sh runs this with 100,000.
	secrets := 10000
	if n, err := strconv.Atoi(os.Getenv("REGGHOST_MIGRATE_SECRETS")); err == nil && n > 0 {
		secrets = n
	}
	c.createNamespace(t, "vault")
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < secrets; i += 8 {
				s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s-%05d", i), Namespace: "vault"}, Data: map[string][]byte{"token": []byte(strings.Repeat("t", 512))}}
				if _, err := c.kube.CoreV1().Secrets("vault").Create(ctx, s, metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("create secret: %v", err)
	}
	mustNoErr(t, "rotate", os.WriteFile(enc, []byte(rotatedEncryption), 0o600))
	waitFor(t, 120*time.Second, "kube-apiserver writes with key2", func() error {
		s, err := c.kube.CoreV1().Secrets("vault").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-", Namespace: "vault"}}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		defer c.kube.CoreV1().Secrets("vault").Delete(ctx, s.Name, metav1.DeleteOptions{})
		if v := c.value(t, "/registry/secrets/vault/"+s.Name); !strings.HasPrefix(string(v), "k8s:enc:aescbc:v1:key2:") {
			return fmt.Errorf("written with %.24q", v)
		}
		return nil
	})
	rotated := filepath.Join(t.TempDir(), "rotated.yaml")
	mustNoErr(t, "write", os.WriteFile(rotated, []byte(rotatedEncryption), 0o600))

	before := c.state(t)
	out, errOut, code := c.regghost(t, "", "migrate", "secrets", "--encryption-provider-config", rotated)
	if code != 3 || !strings.Contains(oneLine(out), "under aescbc/key1, not aescbc/key2") || !strings.Contains(oneLine(out), "keep it: objects are still under it") {
		t.Fatalf("dry run: exit %d\n%s\n%s", code, out, errOut)
	}
	c.assertUnchanged(t, "migrate (dry run)", before)
	checkCapture(t, "dry-run", code, out, errOut)

	// Another client's writes, idle and during the migration (logged for
	// bench/results.md, never asserted).
	idle := c.probeWrites(t, 5*time.Second, nil)
	var took time.Duration
	busy := c.probeWrites(t, 0, func() {
		start := time.Now()
		out, errOut, code = c.regghost(t, "", "migrate", "secrets", "--encryption-provider-config", rotated, "--confirm", "--yes",
			"--max-objects-per-second", "5000", "--command-timeout", "30m")
		took = time.Since(start)
	})
	t.Logf("migrate of %d Secrets in %s (%.0f objects/s); another client's ConfigMap update p99 %s idle, %s during (%.2fx)\n%s\n%s",
		secrets, took.Round(time.Second), float64(secrets)/took.Seconds(), idle, busy, float64(busy)/float64(idle), out, errOut)
	checkCapture(t, "confirm", code, out, errOut)
	if code != 0 {
		t.Fatalf("migrate --confirm: exit %d", code)
	}
	for _, want := range []string{"0 objects of secrets under aescbc/key1", "keep it until etcd is compacted at revision"} {
		if !strings.Contains(oneLine(out), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	resp, err := c.etcd.Get(ctx, "/registry/secrets/", clientv3.WithPrefix())
	mustNoErr(t, "read secrets", err)
	for _, kv := range resp.Kvs {
		if !strings.HasPrefix(string(kv.Value), "k8s:enc:aescbc:v1:key2:") {
			t.Errorf("%s is stored with %.24q", kv.Key, kv.Value)
		}
	}
	c.assertChangedOnly(t, "migrate", before, append(keysUnderPrefix(t, c, "/registry/secrets/"), "/registry/configmaps/default/probe"))

	// Compacted past the rewrites, key1 is held by nothing.
	_, err = c.etcd.Compact(ctx, resp.Header.Revision)
	mustNoErr(t, "compact", err)
	out, errOut, code = c.regghost(t, "", "migrate", "secrets", "--encryption-provider-config", rotated)
	t.Logf("after compaction:\n%s\n%s", out, errOut)
	checkCapture(t, "after-compaction", code, out, errOut)
	if code != 0 || !strings.Contains(oneLine(out), "aescbc/key1 may leave the EncryptionConfiguration's entry for secrets") {
		t.Errorf("after compaction: exit %d\n%s\n%s", code, out, errOut)
	}
}
