package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/regghost/regghost/pkg/etcdscan"
)

// TestStoredVersionsNobodyCanRead: a CRD moves its storage version from v1
// to v2, status.storedVersions is trimmed to [v2] and v1 is removed from
// spec.versions while one object is still stored at v1. Every list of the
// resource then fails; regghost finds the object, with the fix, and never
// calls it a ghost.
func TestStoredVersionsNobodyCanRead(t *testing.T) {
	parallel(t)
	c := startCluster(t, clusterOptions{})
	ctx := context.Background()
	c.createNamespace(t, "lab")
	c.createCRD(t, "example.com", "gadgets", "Gadget")
	c.createCR(t, "example.com", "gadgets", "Gadget", "lab", "old")
	version := func(name string, served, storage bool) map[string]interface{} {
		return map[string]interface{}{"name": name, "served": served, "storage": storage,
			"schema": map[string]interface{}{"openAPIV3Schema": map[string]interface{}{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}
	}
	setVersions := func(versions ...interface{}) {
		crd, err := c.dyn.Resource(crdGVR).Get(ctx, "gadgets.example.com", metav1.GetOptions{})
		mustNoErr(t, "get CRD", err)
		mustNoErr(t, "set versions", unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions"))
		_, err = c.dyn.Resource(crdGVR).Update(ctx, crd, metav1.UpdateOptions{})
		mustNoErr(t, "update CRD versions", err)
	}
	setVersions(version("v1", true, false), version("v2", true, true))
	v2 := schema.GroupVersionResource{Group: "example.com", Version: "v2", Resource: "gadgets"}
	waitFor(t, 30*time.Second, "create a v2 Gadget", func() error {
		_, err := c.dyn.Resource(v2).Namespace("lab").Create(ctx, &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "example.com/v2", "kind": "Gadget", "metadata": map[string]interface{}{"name": "new", "namespace": "lab"}}}, metav1.CreateOptions{})
		return err
	})
	crd, err := c.dyn.Resource(crdGVR).Get(ctx, "gadgets.example.com", metav1.GetOptions{})
	mustNoErr(t, "get CRD", err)
	mustNoErr(t, "trim storedVersions", unstructured.SetNestedStringSlice(crd.Object, []string{"v2"}, "status", "storedVersions"))
	_, err = c.dyn.Resource(crdGVR).UpdateStatus(ctx, crd, metav1.UpdateOptions{})
	mustNoErr(t, "update CRD status", err)
	setVersions(version("v2", true, true))
	waitFor(t, 30*time.Second, "listing gadgets to fail", func() error {
		if _, err := c.dyn.Resource(v2).Namespace("lab").List(ctx, metav1.ListOptions{}); err == nil {
			return errString("gadgets still list")
		}
		return nil
	})

	key := "/registry/example.com/gadgets/lab/old"
	out, errOut, code := c.regghost(t, "", "stored-versions", "-n", "lab", "-o", "json")
	if code != 3 {
		t.Fatalf("versions: exit %d: %s", code, errOut)
	}
	var census struct {
		Versions []etcdscan.StoredVersions `json:"versions"`
		Findings []etcdscan.Finding        `json:"findings"`
	}
	mustNoErr(t, "decode versions", json.Unmarshal([]byte(out), &census))
	if len(census.Findings) != 1 || census.Findings[0].Key != key || !strings.Contains(census.Findings[0].Reason(), "regghost migrate gadgets.example.com --confirm` lists v1 again") {
		t.Errorf("findings: %+v", census.Findings)
	}
	found := false
	for _, v := range census.Versions {
		if v.Resource == "gadgets.example.com" {
			found = true
			if v.Stored["example.com/v1"] != 1 || v.Stored["example.com/v2"] != 1 || strings.Join(v.CRDStoredVersions, ",") != "v2" || strings.Join(v.CRDVersions, ",") != "v2 (served, storage)" {
				t.Errorf("census of gadgets: %+v", v)
			}
		}
	}
	if !found {
		t.Errorf("no census of gadgets: %+v", census.Versions)
	}
	out, errOut, code = c.regghost(t, "", "stored-versions", "-n", "lab")
	checkCapture(t, "versions", code, errOut, out)
	for _, s := range []string{"STORED AS", "example.com/v1", "v2 (served, storage)", key} {
		if !strings.Contains(out, s) {
			t.Errorf("versions table lacks %q:\n%s", s, out)
		}
	}
	rep, code := c.scanJSON(t, "-n", "lab")
	assertFindings(t, rep, map[string][]etcdscan.Class{key: {etcdscan.ClassStoredVersion}})
	if code != 0 {
		t.Errorf("scan exit %d: a stored-version finding is recoverable, not a ghost", code)
	}
	out, errOut, code = c.regghost(t, "", "purge", "-n", "lab")
	if code != 0 || !strings.Contains(out, "No ghost to purge") {
		t.Errorf("purge: exit %d: %s\n%s", code, errOut, out)
	}
}
