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

// TestRevealed: what the second analysis finds to remove that the plan
// the operator confirmed did not show: an object not listed, or a
// finalizer to remove it did not name; never what was shown.
func TestRevealed(t *testing.T) {
	blocker := func(key string, remove ...string) Blocker { return Blocker{Key: key, Remove: remove} }
	shown := &Analysis{Blockers: []Blocker{blocker("/registry/configmaps/app/a", "example.com/x"), blocker("/registry/configmaps/app/kept")}}
	for _, tt := range []struct {
		name string
		now  []Blocker
		want []string
	}{
		{"the same blockers", []Blocker{blocker("/registry/configmaps/app/a", "example.com/x")}, nil},
		{"fewer", nil, nil},
		{"an object not shown", []Blocker{blocker("/registry/configmaps/app/a", "example.com/x"), blocker("/registry/example.com/widgets/app/w", "example.com/y")},
			[]string{"/registry/example.com/widgets/app/w"}},
		{"a finalizer not named", []Blocker{blocker("/registry/configmaps/app/a", "example.com/x", "example.com/z")}, []string{"/registry/configmaps/app/a"}},
		{"one shown with nothing to remove now has", []Blocker{blocker("/registry/configmaps/app/kept", "example.com/x")}, []string{"/registry/configmaps/app/kept"}},
		{"the same finalizer in the namespace's spec, not its metadata", []Blocker{{Key: "/registry/configmaps/app/a", Spec: true, Remove: []string{"example.com/x"}}}, []string{"/registry/configmaps/app/a"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, b := range revealed(shown, &Analysis{Blockers: tt.now}) {
				got = append(got, b.Key)
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("revealed %v, want %v", got, tt.want)
			}
		})
	}
}
