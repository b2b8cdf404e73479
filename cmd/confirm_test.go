package cmd

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/unstick"
)

// TestAskAgainIsNeverAnsweredByYes: --yes answers the plan that was shown;
// a question about what a step revealed after it is never answered without
// a terminal, --yes or not, while the first question is.
func TestAskAgainIsNeverAnsweredByYes(t *testing.T) {
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	for _, in := range []io.Reader{strings.NewReader("yes\n"), devNull} {
		w := &writeFlags{confirm: true, yes: true}
		var errOut bytes.Buffer
		if err := w.ask(in, &errOut, "Delete?"); err != nil {
			t.Errorf("%T: the plan's question with --yes: %v", in, err)
		}
		err := w.askAgain(in, &errOut, "Also remove the finalizers of these 1 objects, which the plan did not show?")
		if err == nil || !strings.Contains(err.Error(), "--yes confirms only the plan that was shown") {
			t.Errorf("%T: what a step revealed, with --yes: %v, want a no", in, err)
		}
	}
}

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
	ask := passwordAsker(strings.NewReader("hunter2\n"), &errOut, "root")
	if pw, err := ask(); pw != "" || err != nil || errOut.Len() != 0 {
		t.Errorf("asked without a terminal: %q, %v, %q", pw, err, errOut.String())
	}
	// A command that never connects never asks: version with --user.
	var out bytes.Buffer
	if code := Run([]string{"version", "--user", "root"}, strings.NewReader(""), &out, &errOut); code != ExitOK || strings.Contains(errOut.String(), "Password") {
		t.Errorf("version --user root: exit %d, %q", code, errOut.String())
	}
}

// TestWrapQuestion: a long question is wrapped to the terminal, the answer
// typed on its last line.
func TestWrapQuestion(t *testing.T) {
	q := "Delete 1 dangling APIService, then annotate namespace shop regghost.io/unblocked-at (to have the namespace controller look again), through the API server? Type yes to continue:"
	got := wrapQuestion(q, 80)
	for _, line := range strings.Split(got, "\n") {
		if len(line) > 80 {
			t.Errorf("line of %d columns: %q", len(line), line)
		}
	}
	if strings.Join(strings.Fields(got), " ") != q || strings.HasSuffix(got, "\n") {
		t.Errorf("wrapped to %q", got)
	}
}
