package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/table"
)

// TestResultsKeepOrder: the outcome table keeps its rows in order (a
// volume's Retain right before its claim's delete), and each detail it
// cuts is written whole below it.
func TestResultsKeepOrder(t *testing.T) {
	pv, claim := "/registry/persistentvolumes/pvc-8730bc07-1390-4a1e-9e63-c8346b2f7c94", "/registry/persistentvolumeclaims/kb-system/data"
	detail := "reclaim policy Delete -> Retain through the API server (resourceVersion 86 -> 95); the original is in the backup"
	var b bytes.Buffer
	Results(&table.Layout{Writer: &b, Width: table.MaxWidth}, []etcdwrite.Result{
		{Key: pv, Outcome: etcdwrite.Retained, Detail: detail},
		{Key: claim, Outcome: etcdwrite.Deleted},
	})
	lines := strings.Split(b.String(), "\n")
	if !strings.HasPrefix(lines[1], pv+"  retained") || !strings.HasPrefix(lines[2], claim+" ") {
		t.Errorf("rows out of order:\n%s", b.String())
	}
	if !strings.Contains(b.String(), "\nretained "+pv+":\n  "+detail+"\n") {
		t.Errorf("the cut detail is not written whole:\n%s", b.String())
	}
	for _, l := range lines {
		if table.TextWidth(l) > table.MaxWidth {
			t.Errorf("line of %d columns: %q", table.TextWidth(l), l)
		}
	}
}

// TestResultErrors: which outcomes fail a command, and what the error says
// (the first key concerned, escaped).
func TestResultErrors(t *testing.T) {
	r := func(key string, o etcdwrite.Outcome) etcdwrite.Result {
		return etcdwrite.Result{Key: key, Outcome: o, Detail: "why\x1b"}
	}
	tests := []struct {
		name                         string
		results                      []etcdwrite.Result
		refused, stillPresent, confl string
	}{
		{"all restored", []etcdwrite.Result{r("/a", etcdwrite.Restored), r("/b", etcdwrite.AlreadyPresent)}, "", "", ""},
		{"refused", []etcdwrite.Result{r("/a", etcdwrite.Restored), r("/b", etcdwrite.Refused), r("/c", etcdwrite.Refused)},
			`2 keys were refused, not restored (/b: why\u001b)`, "", `2 keys were refused, not restored (/b: why\u001b)`},
		{"still present", []etcdwrite.Result{r("/a", etcdwrite.StillPresent)}, "", `some keys were not restored (/a: why\u001b)`, `some keys were not restored (/a: why\u001b)`},
		{"conflict", []etcdwrite.Result{r("/a", etcdwrite.Conflict)}, "", "", `some keys were not restored (/a: why\u001b)`},
		{"without volume", []etcdwrite.Result{r("/a", etcdwrite.RestoredWithoutVolume)}, "", "", `a claim was restored without its volume (/a: why\u001b)`},
	}
	msg := func(err error) string {
		if err == nil {
			return ""
		}
		return err.Error()
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := msg(RefusedError(tt.results)); got != tt.refused {
				t.Errorf("RefusedError = %q, want %q", got, tt.refused)
			}
			if got := msg(StillPresentError(tt.results)); got != tt.stillPresent {
				t.Errorf("StillPresentError = %q, want %q", got, tt.stillPresent)
			}
			if got := msg(ConflictError(tt.results)); got != tt.confl {
				t.Errorf("ConflictError = %q, want %q", got, tt.confl)
			}
		})
	}
}
