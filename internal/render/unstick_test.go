package render

import (
	"strings"
	"testing"
	"time"

	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/unstick"
)

// TestUnstickDryRunFooter: the dry run says what --confirm would do with
// this plan, the namespace's annotation included, never finalizers it does
// not list.
func TestUnstickDryRunFooter(t *testing.T) {
	api := etcdscan.DanglingRef{Name: "v1beta1.metrics.k8s.io"}
	held := unstick.Blocker{Key: "/registry/example.com/widgets/app/w1", Remove: []string{"example.com/cleanup"}}
	nudge := &unstick.NudgePlan{Key: "/registry/namespaces/app", Name: "app", UID: "u1", Annotation: unstick.NudgeAnnotation}
	for _, tt := range []struct {
		a    unstick.Analysis
		want string
	}{
		{unstick.Analysis{Blockers: []unstick.Blocker{held}}, "Dry run: nothing was changed. Re-run with --confirm to remove the finalizers above."},
		{unstick.Analysis{DeleteAPIServices: []etcdscan.DanglingRef{api}}, "Dry run: nothing was changed. Re-run with --confirm to delete the APIService named above (backed up)."},
		{unstick.Analysis{DeleteAPIServices: []etcdscan.DanglingRef{api, api}, Blockers: []unstick.Blocker{held}},
			"Dry run: nothing was changed. Re-run with --confirm to delete the APIServices named above (backed up), then remove the finalizers above."},
		{unstick.Analysis{}, "Dry run: nothing was changed."},
		// The annotation that has the namespace controller look again is
		// part of the plan: --confirm writes it only because it is shown.
		{unstick.Analysis{DeleteAPIServices: []etcdscan.DanglingRef{api}, Nudge: nudge},
			"Dry run: nothing was changed. Re-run with --confirm to delete the APIService named above (backed up), then annotate namespace app regghost.io/unblocked-at (to have the namespace controller look again)."},
		{unstick.Analysis{DeleteAPIServices: []etcdscan.DanglingRef{api}, Nudge: nudge, Blockers: []unstick.Blocker{held}},
			"Dry run: nothing was changed. Re-run with --confirm to delete the APIService named above (backed up), then annotate namespace app regghost.io/unblocked-at (to have the namespace controller look again), then remove the finalizers above."},
	} {
		if got := unstickDryRunFooter(&tt.a); got != tt.want {
			t.Errorf("footer %q, want %q", got, tt.want)
		}
	}
}

// TestUnstickResultSaysANamespaceCreatedAgain: a namespace deleted and
// created again before the nudge is said to be so, not "still there".
func TestUnstickResultSaysANamespaceCreatedAgain(t *testing.T) {
	a := &unstick.Analysis{Target: "namespace app"}
	res := &unstick.Result{Recreated: true, Dirs: []string{"/backups/x"}, Results: []etcdwrite.Result{{Key: "/registry/namespaces/app", Outcome: etcdwrite.SkippedChanged,
		Detail: "namespace app was deleted and created again since it was reviewed (uid u1, now u2): not annotated; the new namespace is left alone"}}}
	var out strings.Builder
	if err := UnstickResult(a, res, time.Minute).Human(&out, false, false); err != nil {
		t.Fatal(err)
	}
	flat := strings.Join(strings.Fields(out.String()), " ")
	if !strings.Contains(flat, "namespace app was deleted and created again since it was reviewed (another UID): the one reviewed is gone, and nothing was done to the new one.") ||
		strings.Contains(flat, "still there") || !strings.Contains(flat, "skipped-changed") {
		t.Errorf("result:\n%s", out.String())
	}
}
