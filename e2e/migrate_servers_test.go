package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestMigrateWithAnAPIServerThatCannotBeAsked: the default/kubernetes
// EndpointSlice lists a second kube-apiserver that refuses connections (one
// down, still listed). migrate's dry runs count and name it as not asked,
// instead of failing on its client error; a confirmed run rewrites (the
// proof is read from etcd) but does not narrow status.storedVersions, since
// the server that was not asked may still write the old version; and only
// the widgets changed in etcd.
func TestMigrateWithAnAPIServerThatCannotBeAsked(t *testing.T) {
	parallel(t)
	port := freePort(t)
	c := startCluster(t, clusterOptions{apiserverIP: "127.0.0.2", apiserverPort: port, apiserverName: "apiserver-a"})
	c.registerAPIServers(t, port, "127.0.0.2", "127.0.0.3")
	down := fmt.Sprintf("https://127.0.0.3:%d", port)
	ctx := context.Background()
	const group, plural, kind = "example.com", "widgets", "Widget"
	_, err := c.dyn.Resource(crdGVR).Create(ctx, versionedCRD(group, plural, kind, "v1beta1", "v1beta1", "v1"), metav1.CreateOptions{})
	mustNoErr(t, "create CRD", err)
	c.createNamespace(t, "shop")
	old := schema.GroupVersionResource{Group: group, Version: "v1beta1", Resource: plural}
	for i := range 5 {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/v1beta1", "kind": kind,
			"metadata": map[string]any{"name": fmt.Sprintf("w-%d", i), "namespace": "shop"}}}
		waitFor(t, 60*time.Second, "create widget", func() error {
			_, err := c.dyn.Resource(old).Namespace("shop").Create(ctx, u, metav1.CreateOptions{})
			return created(err)
		})
	}
	c.storeAt(t, group, plural, kind, "v1")
	name := plural + "." + group

	for _, args := range [][]string{{"migrate", name}, {"migrate", "secrets"}} {
		out, errOut, code := c.regghost(t, "", args...)
		if code == 1 || !strings.Contains(oneLine(out), "Not every kube-apiserver could be asked: "+down) {
			t.Errorf("%s: exit %d\n%s\n%s", strings.Join(args, " "), code, out, errOut)
		}
	}
	before := c.state(t)
	out, errOut, code := c.regghost(t, "", "migrate", name, "--prune-stored-versions", "--backup-dir", filepath.Join(c.dir, "backups"), "--confirm", "--yes")
	t.Logf("migrate --confirm:\n%s\n%s", out, errOut)
	if code != 1 || !strings.Contains(oneLine(out+errOut), "status.storedVersions of CustomResourceDefinition "+name+" was not narrowed") ||
		!strings.Contains(oneLine(out+errOut), down) {
		t.Errorf("migrate --confirm with a kube-apiserver not asked: exit %d", code)
	}
	if got := c.storedVersions(t, "/registry/"+group+"/"+plural+"/"); got[group+"/v1"] != 5 || len(got) != 1 {
		t.Errorf("stored after the rewrite: %v", got)
	}
	crd, err := c.dyn.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
	mustNoErr(t, "read CRD", err)
	if sv, _, _ := unstructured.NestedStringSlice(crd.Object, "status", "storedVersions"); fmt.Sprint(sv) != "[v1beta1 v1]" {
		t.Errorf("storedVersions narrowed to %v with a kube-apiserver not asked", sv)
	}
	c.assertChangedOnly(t, "migrate", before, keysUnderPrefix(t, c, "/registry/"+group+"/"+plural+"/"))
}
