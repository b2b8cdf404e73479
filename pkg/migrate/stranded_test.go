package migrate

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/etcdwrite"
)

// storedCRD is widgets.example.com storing at v1 with a schema of its own
// (spec.bar only) and a status subresource, as the API server returns it.
func storedCRD(t *testing.T) (*unstructured.Unstructured, *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com", UID: "u1", ResourceVersion: "7"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object",
						Properties: map[string]apiextensionsv1.JSONSchemaProps{"bar": {Type: "string"}}}}}},
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}}}},
			Conversion: &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter}}}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}, crd
}

// TestListAgainKeepsEveryField: a stranded version listed again for a
// rewrite keeps every field of the objects stored at it (the API server
// prunes with the schema of the object's own version before a conversion
// webhook sees it): its schema preserves unknown fields at its root, never
// the storage version's schema, and it is neither served nor stored.
func TestListAgainKeepsEveryField(t *testing.T) {
	u, crd := storedCRD(t)
	crdList := map[schema.GroupVersionResource]string{crdGVR: "CustomResourceDefinitionList"}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), crdList, u)
	c := &Census{Target: Target{Resource: schema.GroupResource{Group: "example.com", Resource: "widgets"}, Version: "v1", CRD: crd, CRDRevision: 7}}
	if _, err := ListAgain(context.Background(), dyn, c, []string{"v1alpha1"}); err != nil {
		t.Fatal(err)
	}
	got, err := dyn.Resource(crdGVR).Get(context.Background(), crd.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	vs, _, _ := unstructured.NestedSlice(got.Object, "spec", "versions")
	if len(vs) != 2 {
		t.Fatalf("versions: %v", vs)
	}
	again := vs[1].(map[string]any)
	root, _, _ := unstructured.NestedMap(again, "schema", "openAPIV3Schema")
	if again["name"] != "v1alpha1" || again["served"] != false || again["storage"] != false {
		t.Errorf("listed again as %v", again)
	}
	if root["x-kubernetes-preserve-unknown-fields"] != true || root["properties"] != nil {
		t.Errorf("listed again with a schema that prunes: %v", root)
	}
	if _, ok, _ := unstructured.NestedMap(again, "subresources", "status"); !ok {
		t.Errorf("listed again without the status subresource: %v", again)
	}
}

// TestStorageVersionNotServed: a CRD may store at a version it does not
// serve; the rewrite then goes through a served version (the API server
// answers 404 for the other, and every object would look deleted), and a
// CRD that serves none is refused before anything is written.
func TestStorageVersionNotServed(t *testing.T) {
	for _, tc := range []struct {
		name    string
		vs      []apiextensionsv1.CustomResourceDefinitionVersion
		through string
		refused bool
	}{
		{"storage served", []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1beta1", Served: true}, {Name: "v1", Served: true, Storage: true}}, "v1", false},
		{"storage not served", []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Storage: true}, {Name: "v2", Served: true}}, "v2", false},
		{"none served", []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Storage: true}}, "v1", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cli, _ := etcdtest.Start(t)
			crd := &apiextensionsv1.CustomResourceDefinition{TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
				ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
				Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
					Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget"}, Versions: tc.vs}}
			b, err := json.Marshal(crd)
			if err != nil {
				t.Fatal(err)
			}
			put(t, cli, reg+"apiextensions.k8s.io/customresourcedefinitions/widgets.example.com", string(b))
			put(t, cli, reg+"example.com/widgets/ns/w", `{"apiVersion":"example.com/v0","kind":"Widget","metadata":{"name":"w","namespace":"ns","uid":"w1"}}`)
			c := census(t, cli, "widgets.example.com", nil)
			if got := c.Target.GVR().Version; got != tc.through {
				t.Errorf("rewrite goes through %s, want %s", got, tc.through)
			}
			if c.StorageVersion != "v1" {
				t.Errorf("storage version %q", c.StorageVersion)
			}
			err = Servable(c)
			if tc.refused != (err != nil) || err != nil && !strings.Contains(err.Error(), "serves no version") {
				t.Errorf("Servable: %v", err)
			}
		})
	}
}

// TestRewriteJournal: a converted object's rewrite is journaled for
// restore only when the API server rewrote exactly the value backed up; a
// write by someone else in between (read at another revision, a conflict,
// or an update the API server skipped) is journaled as changed, so restore
// never puts the backup back over it.
func TestRewriteJournal(t *testing.T) {
	backedUp := map[string]int64{"/registry/example.com/gadgets/lab/g-1": 100}
	obj := Object{Key: "/registry/example.com/gadgets/lab/g-1", StoredAs: "example.com/v1alpha1"}
	for _, tc := range []struct {
		name string
		out  Outcome
		want etcdwrite.Outcome
	}{
		{"the value backed up", Outcome{Object: obj, Read: 100, Revision: 180}, etcdwrite.Rewritten},
		{"edited after the backup", Outcome{Object: obj, Read: 150, Revision: 150}, etcdwrite.SkippedChanged},
		{"a conflict on the way", Outcome{Object: obj, Read: 100, Revision: 190, Conflicts: 1}, etcdwrite.SkippedChanged},
		{"skipped by the API server", Outcome{Object: obj, Read: 100, Revision: 100}, etcdwrite.SkippedChanged},
	} {
		r, ok := rewriteJournal(backedUp, tc.out)
		if !ok || r.Outcome != tc.want {
			t.Errorf("%s: %v %+v, want %s", tc.name, ok, r, tc.want)
		}
	}
	if _, ok := rewriteJournal(backedUp, Outcome{Object: Object{Key: "/registry/example.com/gadgets/lab/other"}, Read: 1, Revision: 2}); ok {
		t.Error("an object not backed up was journaled")
	}
}

// TestConvertedThroughAnotherVersion: the objects backed up before a
// rewrite are those it converts: stored at another version; and, when the
// storage version is not served and the rewrite reads and writes through
// another, every one (each goes there and back through the conversion).
func TestConvertedThroughAnotherVersion(t *testing.T) {
	rewrite := []Object{{Key: reg + "example.com/widgets/ns/a", StoredAs: "example.com/v1"}, {Key: reg + "example.com/widgets/ns/b", StoredAs: "example.com/v1beta1"}}
	for _, tc := range []struct {
		through string
		want    []string
		reason  string
	}{
		{"", []string{reg + "example.com/widgets/ns/b"}, "converted to v1 by the rewrite"},
		{"v2", []string{reg + "example.com/widgets/ns/a", reg + "example.com/widgets/ns/b"}, "converted to v2 and back by the rewrite (v1 is not served)"},
	} {
		plan := &Census{Rewrite: rewrite, Target: Target{Resource: schema.GroupResource{Group: "example.com", Resource: "widgets"}, Version: "v1", Through: tc.through}}
		var got []string
		for _, w := range convertedWants(plan) {
			got = append(got, w.Entry.Key)
			if !strings.Contains(w.Entry.Reason, tc.reason) {
				t.Errorf("through %q: reason %q, want it to say %q", tc.through, w.Entry.Reason, tc.reason)
			}
		}
		if strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("through %q: backed up %v, want %v", tc.through, got, tc.want)
		}
	}
}
