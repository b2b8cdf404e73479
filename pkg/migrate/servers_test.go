package migrate

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/regghost/regghost/pkg/apiview"
)

// discovery serves the legacy discovery of one kube-apiserver that serves
// widgets.example.com at v1beta1 and v1 and stores it at storedAt.
func discovery(t *testing.T, storedAt string) *apiview.View {
	t.Helper()
	hash := apiview.StorageHash("example.com", storedAt, "Widget")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body any
		switch r.URL.Path {
		case "/api":
			body = metav1.APIVersions{Versions: []string{"v1"}}
		case "/apis":
			body = metav1.APIGroupList{Groups: []metav1.APIGroup{{Name: "example.com", Versions: []metav1.GroupVersionForDiscovery{
				{GroupVersion: "example.com/v1", Version: "v1"}, {GroupVersion: "example.com/v1beta1", Version: "v1beta1"}}}}}
		case "/apis/example.com/v1", "/apis/example.com/v1beta1":
			body = metav1.APIResourceList{GroupVersion: strings.TrimPrefix(r.URL.Path, "/apis/"), APIResources: []metav1.APIResource{
				{Name: "widgets", Kind: "Widget", Namespaced: true, Verbs: []string{"get", "list"}, StorageVersionHash: hash}}}
		default:
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(body)
	}))
	t.Cleanup(srv.Close)
	v, err := apiview.New(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestStoredVersionsNarrowedOnlyWhenEveryServerStoresThere: before
// status.storedVersions is narrowed every kube-apiserver is asked where it
// stores the resource now: one whose CRD cache still holds the old storage
// version, one that could not be asked, or none asked at all refuses the
// narrowing, naming which.
func TestStoredVersionsNarrowedOnlyWhenEveryServerStoresThere(t *testing.T) {
	gr := schema.GroupResource{Group: "example.com", Resource: "widgets"}
	for _, tc := range []struct {
		name    string
		servers func(t *testing.T) *Servers
		want    string
	}{
		{"every one at v1", func(t *testing.T) *Servers {
			return &Servers{Asked: []Server{{Address: "a", View: discovery(t, "v1")}, {Address: "b", View: discovery(t, "v1")}}}
		}, ""},
		{"one still at v1beta1", func(t *testing.T) *Servers {
			return &Servers{Asked: []Server{{Address: "a", View: discovery(t, "v1")}, {Address: "b", View: discovery(t, "v1beta1")}}}
		}, "kube-apiserver b still stores widgets.example.com at example.com/v1beta1, not v1"},
		{"one not asked", func(t *testing.T) *Servers {
			return &Servers{Asked: []Server{{Address: "a", View: discovery(t, "v1")}}, NotAsked: []string{"https://127.0.0.3:6443: connection refused"}}
		}, "not every kube-apiserver could be asked"},
		{"none asked", func(*testing.T) *Servers { return nil }, "were not asked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.servers(t).StoreAt(context.Background(), gr, "v1", "Widget")
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// TestNarrowAsksAgainThenCountsAgain: right before status.storedVersions
// is narrowed, the kube-apiservers are listed and asked again, and etcd is
// counted once more: one that still stores the old version, or an object
// written at it since the count, leaves status.storedVersions as it is.
func TestNarrowAsksAgainThenCountsAgain(t *testing.T) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	crd.Name, crd.Spec.Names.Kind = "widgets.example.com", "Widget"
	crd.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1beta1", Served: true}, {Name: "v1", Served: true, Storage: true}}
	crd.Status.StoredVersions = []string{"v1beta1", "v1"}
	target := Target{Resource: schema.GroupResource{Group: "example.com", Resource: "widgets"}, Version: "v1", CRD: crd}
	proof := &Census{Target: target, ByVersion: map[string]int{"example.com/v1": 3}}
	written := &Census{Target: target, ByVersion: map[string]int{"example.com/v1": 2, "example.com/v1beta1": 1},
		Rewrite: []Object{{Key: "/registry/example.com/widgets/ns/w", StoredAs: "example.com/v1beta1"}}}
	for _, tc := range []struct {
		name    string
		servers func(t *testing.T) *Servers
		again   *Census
		want    string
	}{
		{"a server still at v1beta1", func(t *testing.T) *Servers {
			return &Servers{Asked: []Server{{Address: "b", View: discovery(t, "v1beta1")}}}
		}, proof, "kube-apiserver b still stores"},
		{"an object written at v1beta1 since the count", func(t *testing.T) *Servers {
			return &Servers{Asked: []Server{{Address: "a", View: discovery(t, "v1")}}}
		}, written, "1 object is stored at an old version again since the count"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := &Census{Target: target, ByVersion: map[string]int{"example.com/v1beta1": 3}}
			res := &Result{Proof: proof, edited: func(int64, string) {}}
			err := res.narrow(context.Background(), plan, Options{PruneStoredVersions: true,
				AskServers: func(context.Context) *Servers { return tc.servers(t) },
				Again:      func(context.Context) (*Census, error) { return tc.again, nil }})
			if err == nil || !strings.Contains(err.Error(), tc.want) || res.Pruned {
				t.Errorf("got %v (pruned %v), want %q", err, res.Pruned, tc.want)
			}
		})
	}
}
