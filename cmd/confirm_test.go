package cmd

import (
	"bytes"
	"strings"
	"testing"

	"github.com/regghost/regghost/internal/cli"
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
		if got := unstickQuestion(&tt.a); got != tt.want {
			t.Errorf("unstickQuestion = %q, want %q", got, tt.want)
		}
	}
}

// TestPasswordAskerWithoutATerminal asks nothing and says nothing: a command
// that connects then says what to give.
func TestPasswordAskerWithoutATerminal(t *testing.T) {
	var errOut bytes.Buffer
	ask := cli.PasswordAsker(strings.NewReader("hunter2\n"), &errOut, "root")
	if pw, err := ask(); pw != "" || err != nil || errOut.Len() != 0 {
		t.Errorf("asked without a terminal: %q, %v, %q", pw, err, errOut.String())
	}
	// A command that never connects never asks: version with --user.
	var out bytes.Buffer
	if code := Run([]string{"version", "--user", "root"}, strings.NewReader(""), &out, &errOut); code != ExitOK || strings.Contains(errOut.String(), "Password") {
		t.Errorf("version --user root: exit %d, %q", code, errOut.String())
	}
}
