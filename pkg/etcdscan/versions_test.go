package etcdscan

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestCRDVersionProblem(t *testing.T) {
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "gadgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "example.com", Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
			{Name: "v1beta1", Served: false}, {Name: "v1", Served: true}, {Name: "v2", Served: true, Storage: true}}},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{StoredVersions: []string{"v1beta1", "v2"}}}
	tests := []struct {
		version string
		want    string
	}{
		{"v2", ""},
		{"v0", "`regghost migrate gadgets.example.com --confirm` lists v0 again (served: false, storage: false) for the run, rewrites every object to v2"},
		{"v1beta1", "lists but no longer serves"},
		{"v1", "missing from CustomResourceDefinition gadgets.example.com's status.storedVersions [v1beta1, v2]"},
	}
	for _, tt := range tests {
		got := crdVersionProblem(crd, tt.version, "gadgets.example.com")
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("%s: %q, want %q", tt.version, got, tt.want)
		}
	}
}
