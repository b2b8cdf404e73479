package unstick

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/regghost/regghost/pkg/dangling"
	"github.com/regghost/regghost/pkg/etcdscan"
)

// TestResolveRefusesAManagedAPIService: a dangling APIService that Helm
// tracks is refused without AcceptManaged, before anything is written,
// naming the flag that takes it.
func TestResolveRefusesAManagedAPIService(t *testing.T) {
	ref := etcdscan.DanglingRef{Key: "/registry/apiregistration.k8s.io/apiservices/v1.metrics.example.com", Kind: "APIService",
		Name: "v1.metrics.example.com", ModRevision: 7, Field: "spec.service", Target: "service kb/metrics",
		State: etcdscan.DanglingGone, ManagedBy: []string{"Helm release kb/metrics"}}
	a := &Analysis{Target: "namespace kb", Key: "/registry/namespaces/kb", Exists: true, Terminating: true,
		DeleteAPIServices: []etcdscan.DanglingRef{ref}}
	res, err := Resolve(context.Background(), a, "/registry/", ResolveOptions{})
	if res != nil || !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), dangling.AcceptManagedFlag) || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("Resolve: %+v, %v; want refused, naming %s", res, err, dangling.AcceptManagedFlag)
	}
	if len(a.DeleteAPIServices) != 1 {
		t.Errorf("the analysis lost its APIServices to delete: %+v", a.DeleteAPIServices)
	}
}
