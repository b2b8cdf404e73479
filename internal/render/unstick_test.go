package render

import (
	"testing"

	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/unstick"
)

// TestUnstickDryRunFooter: the dry run says what --confirm would do with
// this plan, never finalizers it does not list.
func TestUnstickDryRunFooter(t *testing.T) {
	api := etcdscan.DanglingRef{Name: "v1beta1.metrics.k8s.io"}
	held := unstick.Blocker{Key: "/registry/example.com/widgets/app/w1", Remove: []string{"example.com/cleanup"}}
	for _, tt := range []struct {
		a    unstick.Analysis
		want string
	}{
		{unstick.Analysis{Blockers: []unstick.Blocker{held}}, "Dry run: nothing was changed. Re-run with --confirm to remove the finalizers above."},
		{unstick.Analysis{DeleteAPIServices: []etcdscan.DanglingRef{api}}, "Dry run: nothing was changed. Re-run with --confirm to delete the APIService named above (backed up)."},
		{unstick.Analysis{DeleteAPIServices: []etcdscan.DanglingRef{api, api}, Blockers: []unstick.Blocker{held}},
			"Dry run: nothing was changed. Re-run with --confirm to delete the APIServices named above (backed up), then remove the finalizers above."},
		{unstick.Analysis{}, "Dry run: nothing was changed."},
	} {
		if got := unstickDryRunFooter(&tt.a); got != tt.want {
			t.Errorf("footer %q, want %q", got, tt.want)
		}
	}
}
