package resolve_test

import (
	"context"
	"strings"
	"testing"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/etcdscan"
	. "github.com/regghost/regghost/pkg/resolve"
)

// TestObjectKey: kubectl's names of an object (TYPE by plural, kind,
// short name or with its group; -n, else default) are its etcd key; a type
// nobody serves, a namespace on a cluster-scoped type, are errors.
func TestObjectKey(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	ctx := context.Background()
	crd := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.example.com"},"spec":{"group":"example.com","names":{"plural":"widgets","singular":"widget","kind":"Widget","shortNames":["wd"]},"scope":"Namespaced","versions":[{"name":"v1","served":true,"storage":true}]}}`
	if _, err := cli.Put(ctx, "/registry/apiextensions.k8s.io/customresourcedefinitions/widgets.example.com", crd); err != nil {
		t.Fatal(err)
	}
	store, err := etcdscan.NewEtcdStore(ctx, cli, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		typ, name, ns string
		want, err     string
	}{
		{"pods", "p1", "shop", "/registry/pods/shop/p1", ""},
		{"pod", "p1", "", "/registry/pods/default/p1", ""},
		{"po", "p1", "shop", "/registry/pods/shop/p1", ""},
		{"Pod", "p1", "shop", "/registry/pods/shop/p1", ""},
		{"svc", "web", "shop", "/registry/services/specs/shop/web", ""},
		{"deploy", "web", "shop", "/registry/deployments/shop/web", ""},
		{"deployments.apps", "web", "shop", "/registry/deployments/shop/web", ""},
		{"node", "n1", "", "/registry/minions/n1", ""},
		{"ns", "shop", "", "/registry/namespaces/shop", ""},
		{"crd", "widgets.example.com", "", "/registry/apiextensions.k8s.io/customresourcedefinitions/widgets.example.com", ""},
		{"widget", "w1", "shop", "/registry/example.com/widgets/shop/w1", ""},
		{"wd", "w1", "shop", "/registry/example.com/widgets/shop/w1", ""},
		{"widgets.example.com", "w1", "shop", "/registry/example.com/widgets/shop/w1", ""},
		{"ns", "shop", "kube-system", "", "namespaces is cluster-scoped: drop -n kube-system"},
		{"pdo", "p1", "", "", "did you mean pdb, po"},
		{"pods", "", "shop", "", "a name is one path segment"},
	} {
		got, err := ObjectKey(ctx, store, "/registry/", tt.typ, tt.name, tt.ns)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s %s -n %q: %q, %v; want an error with %q", tt.typ, tt.name, tt.ns, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s %s -n %q: %q, %v; want %q", tt.typ, tt.name, tt.ns, got, err, tt.want)
		}
	}
}
