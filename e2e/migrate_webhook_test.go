package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/regghost/regghost/pkg/backup"
)

// conversionWebhook is a real conversion webhook over TLS on loopback,
// as an operator serves one: v1alpha1 keeps a widget's size in spec.foo,
// v1 in spec.bar. It counts the objects it was sent from v1alpha1 and
// those of them that still held spec.foo.
type conversionWebhook struct {
	url, caBundle    string
	fromOld, withFoo atomic.Int64
}

// startConversionWebhook serves the webhook until the test ends.
func startConversionWebhook(t *testing.T) *conversionWebhook {
	t.Helper()
	caKey, caCert, caDER := newCert(t, nil, nil, &x509.Certificate{Subject: pkix.Name{CommonName: "webhook-ca"}, IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature})
	key, _, der := newCert(t, caCert, caKey, &x509.Certificate{Subject: pkix.Name{CommonName: "webhook"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	mustNoErr(t, "listen", err)
	wh := &conversionWebhook{url: "https://" + ln.Addr().String() + "/convert",
		caBundle: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}))}
	srv := &http.Server{Handler: http.HandlerFunc(wh.serve), TLSConfig: &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}},
		ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() { _ = srv.Close() })
	return wh
}

func (wh *conversionWebhook) serve(w http.ResponseWriter, r *http.Request) {
	var review apiextensionsv1.ConversionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, "not a ConversionReview", http.StatusBadRequest)
		return
	}
	resp := &apiextensionsv1.ConversionResponse{UID: review.Request.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
	for _, raw := range review.Request.Objects {
		var obj map[string]any
		if err := json.Unmarshal(raw.Raw, &obj); err != nil {
			resp.Result = metav1.Status{Status: metav1.StatusFailure, Message: err.Error()}
			break
		}
		spec, _ := obj["spec"].(map[string]any)
		if spec == nil {
			spec = map[string]any{}
		}
		if strings.HasSuffix(fmt.Sprint(obj["apiVersion"]), "/v1alpha1") {
			wh.fromOld.Add(1)
			if _, ok := spec["foo"]; ok {
				wh.withFoo.Add(1)
			}
		}
		from, to := "bar", "foo"
		if strings.HasSuffix(review.Request.DesiredAPIVersion, "/v1") {
			from, to = "foo", "bar"
		}
		if v, ok := spec[from]; ok {
			spec[to] = v
			delete(spec, from)
		}
		obj["spec"] = spec
		obj["apiVersion"] = review.Request.DesiredAPIVersion
		b, _ := json.Marshal(obj)
		resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Raw: b})
	}
	review.Response, review.Request = resp, nil
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&review)
}

// webhookCRD is gadgets.example.com: v1alpha1 with spec.foo, v1 with
// spec.bar (each version's schema prunes the other's field), converted by
// wh, stored at storage.
func webhookCRD(wh *conversionWebhook, storage string) *unstructured.Unstructured {
	version := func(name, field string) map[string]any {
		return map[string]any{"name": name, "served": true, "storage": name == storage, "schema": map[string]any{"openAPIV3Schema": map[string]any{
			"type": "object", "properties": map[string]any{"spec": map[string]any{"type": "object",
				"properties": map[string]any{field: map[string]any{"type": "integer"}}}}}}}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "gadgets.example.com"},
		"spec": map[string]any{"group": "example.com", "scope": "Namespaced",
			"names":    map[string]any{"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
			"versions": []any{version("v1alpha1", "foo"), version("v1", "bar")},
			"conversion": map[string]any{"strategy": "Webhook", "webhook": map[string]any{"conversionReviewVersions": []any{"v1"},
				"clientConfig": map[string]any{"url": wh.url, "caBundle": base64.StdEncoding.EncodeToString([]byte(wh.caBundle))}}}},
	}}
}

// TestMigrateStrandedVersionThroughAConversionWebhook: 20 gadgets stored at
// v1alpha1 with spec.foo, which a real conversion webhook maps to v1's
// spec.bar; v1alpha1 then stranded (storedVersions pruned by hand, the
// version removed). migrate lists v1alpha1 again with a schema that keeps
// every field, so the webhook sees spec.foo and every gadget reads
// spec.bar at v1 afterwards; the run's backup holds each converted
// gadget as etcd held it, and only the gadgets and the CRD changed.
func TestMigrateStrandedVersionThroughAConversionWebhook(t *testing.T) {
	parallel(t)
	wh := startConversionWebhook(t)
	c := startCluster(t, clusterOptions{})
	ctx := context.Background()
	_, err := c.dyn.Resource(crdGVR).Create(ctx, webhookCRD(wh, "v1alpha1"), metav1.CreateOptions{})
	mustNoErr(t, "create CRD", err)
	c.createNamespace(t, "lab")
	old := schema.GroupVersionResource{Group: "example.com", Version: "v1alpha1", Resource: "gadgets"}
	for i := range 20 {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1alpha1", "kind": "Gadget",
			"metadata": map[string]any{"name": fmt.Sprintf("g-%d", i), "namespace": "lab"}, "spec": map[string]any{"foo": int64(100 + i)}}}
		waitFor(t, 60*time.Second, "create gadget", func() error {
			_, err := c.dyn.Resource(old).Namespace("lab").Create(ctx, u, metav1.CreateOptions{})
			return created(err)
		})
	}
	cur := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}
	// Before the strand the webhook converts: v1 reads spec.bar.
	g, err := c.dyn.Resource(cur).Namespace("lab").Get(ctx, "g-3", metav1.GetOptions{})
	mustNoErr(t, "read g-3 at v1", err)
	if bar, _, _ := unstructured.NestedInt64(g.Object, "spec", "bar"); bar != 103 {
		t.Fatalf("the webhook does not convert: %v", g.Object["spec"])
	}
	name := "gadgets.example.com"
	c.setCRD(t, name, func(u *unstructured.Unstructured) {
		vs, _, _ := unstructured.NestedSlice(u.Object, "spec", "versions")
		for _, v := range vs {
			m := v.(map[string]any)
			m["storage"] = m["name"] == "v1"
		}
		_ = unstructured.SetNestedSlice(u.Object, vs, "spec", "versions")
	}, false)
	c.setCRD(t, name, func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedStringSlice(u.Object, []string{"v1"}, "status", "storedVersions")
	}, true)
	c.setCRD(t, name, func(u *unstructured.Unstructured) {
		vs, _, _ := unstructured.NestedSlice(u.Object, "spec", "versions")
		_ = unstructured.SetNestedSlice(u.Object, vs[1:], "spec", "versions")
	}, false)
	waitFor(t, 60*time.Second, "the list of gadgets fails", func() error {
		if _, err := c.dyn.Resource(cur).Namespace("lab").List(ctx, metav1.ListOptions{}); err == nil {
			return fmt.Errorf("the list still works")
		}
		return nil
	})
	if got := c.storedVersions(t, "/registry/example.com/gadgets/"); got["example.com/v1alpha1"] != 20 {
		t.Fatalf("stored: %v", got)
	}
	// The API server's own registration drops the APIService of the version
	// no longer served, in the background: gone before the keyspace is
	// read, or the migrate would seem to have deleted it.
	apiService := "/registry/apiregistration.k8s.io/apiservices/v1alpha1.example.com"
	waitFor(t, 60*time.Second, "APIService v1alpha1.example.com removed", func() error {
		if c.value(t, apiService) != nil {
			return fmt.Errorf("still there")
		}
		return nil
	})
	root := filepath.Join(c.dir, "backups")
	before := c.state(t)
	wh.fromOld.Store(0)
	wh.withFoo.Store(0)
	out, errOut, code := c.regghost(t, "", "migrate", name, "--backup-dir", root, "--confirm", "--yes")
	t.Logf("migrate:\n%s\n%s", out, errOut)
	if code != 0 {
		t.Fatalf("migrate --confirm: exit %d", code)
	}
	if !strings.Contains(oneLine(out), "a schema that keeps every field") || !strings.Contains(oneLine(out), "the 20 objects a conversion rewrites") {
		t.Errorf("the steps do not say how v1alpha1 is listed again and what is backed up")
	}
	if wh.fromOld.Load() == 0 || wh.withFoo.Load() != wh.fromOld.Load() {
		t.Errorf("the webhook was sent %d gadgets from v1alpha1, %d of them with spec.foo", wh.fromOld.Load(), wh.withFoo.Load())
	}
	l, err := c.dyn.Resource(cur).Namespace("lab").List(ctx, metav1.ListOptions{})
	mustNoErr(t, "list gadgets at v1", err)
	if len(l.Items) != 20 {
		t.Fatalf("%d gadgets", len(l.Items))
	}
	for _, it := range l.Items {
		var i int64
		fmt.Sscanf(it.GetName(), "g-%d", &i)
		if bar, _, _ := unstructured.NestedInt64(it.Object, "spec", "bar"); bar != 100+i {
			t.Errorf("%s lost its size through the migration: spec %v", it.GetName(), it.Object["spec"])
		}
	}
	if got := c.storedVersions(t, "/registry/example.com/gadgets/"); got["example.com/v1"] != 20 || len(got) != 1 {
		t.Errorf("stored after the migration: %v", got)
	}
	// The backup holds the CRD and each gadget as etcd held it.
	dirs, err := os.ReadDir(root)
	mustNoErr(t, "read backups", err)
	if len(dirs) != 1 {
		t.Fatalf("%d backups", len(dirs))
	}
	b, err := backup.ReadBackup(filepath.Join(root, dirs[0].Name()))
	mustNoErr(t, "read the backup", err)
	gadgets := 0
	for _, e := range b.Entries {
		if strings.HasPrefix(e.Key, "/registry/example.com/gadgets/lab/") && strings.Contains(string(e.Value), `"foo":`) &&
			storedAPIVersion(t, e.Value) == "example.com/v1alpha1" {
			gadgets++
		}
	}
	if gadgets != 20 {
		t.Errorf("the backup holds %d of the 20 gadgets as etcd held them", gadgets)
	}
	c.assertChangedOnly(t, "migrate", before, append(keysUnderPrefix(t, c, "/registry/example.com/gadgets/"), "/registry/apiextensions.k8s.io/customresourcedefinitions/"+name))
}
