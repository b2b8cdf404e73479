package render

import (
	"bytes"
	"fmt"
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

// TestResultsShowAScreenful: past ShownResults keys a person's table keeps
// every key that did not end the routine way, fills the screenful with the
// rest, and counts what it left out; -o wide lists them all.
func TestResultsShowAScreenful(t *testing.T) {
	var results []etcdwrite.Result
	for i := range 1000 {
		o := etcdwrite.Deleted
		if i%400 == 7 {
			o = etcdwrite.SkippedChanged
		}
		results = append(results, etcdwrite.Result{Key: fmt.Sprintf("/registry/configmaps/big/cm-%04d", i), Outcome: o})
	}
	for _, tt := range []struct {
		name       string
		full       bool
		rows, tail int
	}{
		{"a person", false, ShownResults, 1},
		{"-o wide", true, 1000, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			Results(&table.Layout{Writer: &b, Width: 120, Full: tt.full}, results)
			out := b.String()
			if n := strings.Count(out, "/registry/configmaps/big/"); n != tt.rows {
				t.Errorf("%d keys listed, want %d:\n%s", n, tt.rows, out)
			}
			if n := strings.Count(out, "skipped-changed"); n != 3 {
				t.Errorf("%d skipped keys listed, want all 3:\n%s", n, out)
			}
			if got := strings.Count(out, "… and 980 more (980 deleted): -o json lists every key."); got != tt.tail {
				t.Errorf("the count of what is left out appears %d times, want %d:\n%s", got, tt.tail, out)
			}
		})
	}
}

// TestResultsCountOnlyWhatTheyLeaveOut: a screenful of unusual outcomes is
// cut too, and a table that shows every key says nothing more.
func TestResultsCountOnlyWhatTheyLeaveOut(t *testing.T) {
	var many, few []etcdwrite.Result
	for i := range 25 {
		many = append(many, etcdwrite.Result{Key: fmt.Sprintf("/registry/configmaps/big/cm-%02d", i), Outcome: etcdwrite.AlreadyPresent})
	}
	few = many[:ShownResults]
	var b bytes.Buffer
	Results(&table.Layout{Writer: &b, Width: 120}, many)
	if n := strings.Count(b.String(), "already-present"); n != ShownResults+1 || !strings.Contains(b.String(), "… and 5 more (5 already-present)") {
		t.Errorf("25 unusual outcomes:\n%s", b.String())
	}
	b.Reset()
	Results(&table.Layout{Writer: &b, Width: 120}, few)
	if strings.Contains(b.String(), "more (") {
		t.Errorf("every key shown, yet a count of what was left out:\n%s", b.String())
	}
}
