package witnessrole

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// TestRulesNameEveryResource: no wildcard and no subresource anywhere, only
// get and the one list; Secrets and the dangling targets are readable.
func TestRulesNameEveryResource(t *testing.T) {
	want := map[string]bool{"/secrets": false, "/namespaces": false, "/services": false, "apiregistration.k8s.io/apiservices": false,
		"apiextensions.k8s.io/customresourcedefinitions": false, "admissionregistration.k8s.io/validatingwebhookconfigurations": false}
	for _, r := range Rules() {
		for _, s := range append(append(append([]string(nil), r.APIGroups...), r.Resources...), r.Verbs...) {
			if strings.Contains(s, "*") || strings.Contains(s, "/") {
				t.Errorf("rule %+v holds %q: a wildcard or a subresource", r, s)
			}
		}
		for _, v := range r.Verbs {
			if v != "get" && !(v == "list" && len(r.Resources) == 1 && r.Resources[0] == "customresourcedefinitions") {
				t.Errorf("rule %+v grants %q", r, v)
			}
		}
		for _, g := range r.APIGroups {
			if neverStored[g] {
				t.Errorf("rule %+v names a group of reviews", r)
			}
			for _, res := range r.Resources {
				if _, ok := want[g+"/"+res]; ok && r.Verbs[0] == "get" {
					want[g+"/"+res] = true
				}
			}
		}
	}
	for k, ok := range want {
		if !ok {
			t.Errorf("no get on %s", k)
		}
	}
}

// TestFilesAreCurrent: the chart's and the static pod's rules are what
// 'make docs' writes now, and parse as the same rules.
func TestFilesAreCurrent(t *testing.T) {
	root := filepath.Join("..", "..")
	files, err := Files(root)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range files {
		got, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not current: run 'make docs'", path)
		}
	}
	var parsed []rbacv1.PolicyRule
	if err := yaml.UnmarshalStrict(files[ChartFile], &parsed); err != nil {
		t.Fatalf("parse %s: %v", ChartFile, err)
	}
	if got, want := len(parsed), len(Rules()); got != want {
		t.Errorf("%s holds %d rules, want %d", ChartFile, got, want)
	}
}
