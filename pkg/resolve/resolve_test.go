package resolve_test

import (
	"context"
	"testing"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/catalog"
	"github.com/regghost/regghost/pkg/etcdscan"
	. "github.com/regghost/regghost/pkg/resolve"
)

func TestResolver(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	ctx := context.Background()
	for k, v := range map[string]string{
		"/registry/apiextensions.k8s.io/customresourcedefinitions/widgets.example.com": `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.example.com"},"spec":{"group":"example.com","names":{"plural":"widgets","kind":"Widget"},"scope":"Cluster","versions":[{"name":"v2","served":true,"storage":true}]}}`,
		"/registry/apiextensions.k8s.io/customresourcedefinitions/gadgets.example.com": "{broken",
		"/registry/apiregistration.k8s.io/apiservices/v1beta1.metrics.k8s.io":          `{"apiVersion":"apiregistration.k8s.io/v1","kind":"APIService","metadata":{"name":"v1beta1.metrics.k8s.io"},"spec":{"group":"metrics.k8s.io","version":"v1beta1","service":{"namespace":"kube-system","name":"metrics-server"}}}`,
	} {
		if _, err := cli.Put(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	store, err := etcdscan.NewEtcdStore(ctx, cli, 10)
	if err != nil {
		t.Fatal(err)
	}
	served := catalog.New("test", []catalog.Resource{{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment", Namespaced: true}}, nil)
	r, err := Load(ctx, store, "/registry/", served, nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		prefix     string
		src        Source
		kind, ver  string
		namespaced bool
	}{
		{"deployments", Discovery, "Deployment", "v1", true},
		{"example.com/widgets", CRD, "Widget", "v2", false},
		// The key alone: the type exists, its kind is unknown.
		{"example.com/gadgets", CRD, "", "", false},
		{"pods", Release, "Pod", "v1", true},
		{"example.com/nothing", Guess, "", "", false},
	}
	for _, tt := range tests {
		res, src := r.Resource(tt.prefix)
		if src != tt.src || res.Kind != tt.kind || res.Version != tt.ver || res.Namespaced != tt.namespaced || res.Prefix() != tt.prefix {
			t.Errorf("%s: %+v from %s, want kind %q version %q namespaced %v from %s", tt.prefix, res, src, tt.kind, tt.ver, tt.namespaced, tt.src)
		}
	}
	if res, ok := r.ForKind("example.com", "Widget"); !ok || res.Resource != "widgets" {
		t.Errorf("ForKind(example.com, Widget) = %+v, %v", res, ok)
	}
	if _, ok := r.Aggregated["metrics.k8s.io"]; !ok {
		t.Errorf("aggregated groups: %v", r.Aggregated)
	}
}
