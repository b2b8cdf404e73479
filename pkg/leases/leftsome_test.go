package leases

import (
	"testing"

	"github.com/regghost/regghost/pkg/etcdwrite"
)

// TestLeftSome: a removal left something when its plan left keys, or a key
// was not deleted for another reason than being gone already.
func TestLeftSome(t *testing.T) {
	done := []etcdwrite.Result{{Outcome: etcdwrite.Deleted}, {Outcome: etcdwrite.SkippedGone}}
	for _, tt := range []struct {
		name    string
		left    []string
		results []etcdwrite.Result
		want    bool
	}{
		{"all deleted or gone", nil, done, false},
		{"the plan left some", []string{"more events"}, done, true},
		{"one written again", nil, append(done, etcdwrite.Result{Outcome: etcdwrite.SkippedChanged}), true},
	} {
		if got := (&Removed{Results: tt.results}).LeftSome(&Removal{Left: tt.left}); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}
