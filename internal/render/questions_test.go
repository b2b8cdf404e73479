package render

import (
	"testing"

	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/unstick"
)

// TestUnstickQuestion: the question names everything the plan changes.
func TestUnstickQuestion(t *testing.T) {
	blocker := unstick.Blocker{Key: "/registry/example.com/widgets/app/w1", Remove: []string{"example.com/cleanup"}}
	served := unstick.Blocker{Key: "/registry/example.com/widgets/app/w2"}
	api := etcdscan.DanglingRef{Name: "v1beta1.metrics.k8s.io"}
	for _, tt := range []struct {
		a    unstick.Analysis
		want string
	}{
		{unstick.Analysis{Blockers: []unstick.Blocker{blocker, blocker}}, "Remove the finalizers of 2 objects through the API server?"},
		{unstick.Analysis{Blockers: []unstick.Blocker{blocker, served}}, "Remove the finalizers of 1 object through the API server?"},
		{unstick.Analysis{DeleteAPIServices: []etcdscan.DanglingRef{api}}, "Delete 1 dangling APIService through the API server?"},
		{unstick.Analysis{DeleteAPIServices: []etcdscan.DanglingRef{api}, Blockers: []unstick.Blocker{blocker, served}},
			"Delete 1 dangling APIService, then remove the finalizers of 1 object, through the API server?"},
		{unstick.Analysis{DeleteAPIServices: []etcdscan.DanglingRef{api}, DeleteUnavailable: []string{api.Name}},
			"Delete 1 APIService (v1beta1.metrics.k8s.io: its backend down) through the API server?"},
		// The nudge the plan shows is asked for too (--yes answers only
		// what was shown).
		{unstick.Analysis{DeleteAPIServices: []etcdscan.DanglingRef{api}, Nudge: &unstick.NudgePlan{Name: "app", Annotation: unstick.NudgeAnnotation}},
			"Delete 1 dangling APIService, then annotate namespace app regghost.io/unblocked-at (to have the namespace controller look again), through the API server?"},
		{unstick.Analysis{DeleteAPIServices: []etcdscan.DanglingRef{api}, Blockers: []unstick.Blocker{blocker}, Nudge: &unstick.NudgePlan{Name: "app", Annotation: unstick.NudgeAnnotation}},
			"Delete 1 dangling APIService, then annotate namespace app regghost.io/unblocked-at (to have the namespace controller look again), then remove the finalizers of 1 object, through the API server?"},
	} {
		if got := UnstickQuestion(&tt.a); got != tt.want {
			t.Errorf("UnstickQuestion = %q, want %q", got, tt.want)
		}
	}
}
