package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/plural"
	"github.com/regghost/regghost/pkg/table"
)

// Results writes the outcome of each key, in order. DETAIL is cut to fit;
// each detail cut is written whole below the table, on lines of its own
// under its outcome and key (or how many keys share it), wrapped.
//
// A person reads a screenful: past ShownResults keys (and not -o wide) the
// table shows ShownResults of them, those whose outcome is not the routine
// one first, and ends on a line that counts what it left out by outcome;
// -o wide and -o json list every key.
func Results(out io.Writer, results []etcdwrite.Result) {
	if len(results) == 0 {
		return
	}
	shown, left := shownResults(out, results)
	t := table.New(out, "KEY", "OUTCOME", "DETAIL")
	t.Quiet = true
	for _, r := range shown {
		_ = t.Append([]string{r.Key, string(r.Outcome), r.Detail})
	}
	_ = t.Render()
	if left != "" {
		table.Wrapped(out, left)
	}
	results = shown
	if !t.WasCut() {
		return
	}
	type group struct {
		outcome etcdwrite.Outcome
		detail  string
		keys    []string
	}
	var groups []*group
	byDetail := map[string]*group{}
	for _, r := range results {
		detail := table.Escape(r.Detail)
		if table.TextWidth(detail) <= t.Widths()[2] {
			continue
		}
		id := string(r.Outcome) + "\x00" + detail
		g := byDetail[id]
		if g == nil {
			g = &group{outcome: r.Outcome, detail: detail}
			byDetail[id] = g
			groups = append(groups, g)
		}
		g.keys = append(g.keys, table.Escape(r.Key))
	}
	if len(groups) == 0 {
		return
	}
	fmt.Fprintln(out)
	for _, g := range groups {
		who := g.keys[0]
		if len(g.keys) > 1 {
			who = "(" + plural.Of(len(g.keys), "key") + ")"
		}
		table.Para(out, "", "  ", fmt.Sprintf("%s %s:", g.outcome, who))
		table.Para(out, "  ", "  ", g.detail)
	}
}

// ShownResults is how many keys a results table shows a person before it
// counts the rest.
const ShownResults = 20

// routine are the outcomes a repair is for: a key that ended so needs no
// reading, where one skipped, refused or failed does.
var routine = map[etcdwrite.Outcome]bool{
	etcdwrite.Deleted: true, etcdwrite.Restored: true, etcdwrite.Recovered: true, etcdwrite.Rewritten: true,
	etcdwrite.FinalizersRemoved: true, etcdwrite.WouldDelete: true, etcdwrite.WouldRestore: true,
	// A recovery's plan rows carry its action.
	"recover": true,
}

// shownResults picks the rows of a results table and the line counting
// those left out ("" when every one is shown): the keys that did not end
// the routine way first, then the others, ShownResults in all.
func shownResults(out io.Writer, results []etcdwrite.Result) ([]etcdwrite.Result, string) {
	if table.Full(out) || len(results) <= ShownResults {
		return results, ""
	}
	keep := make([]bool, len(results))
	n := 0
	for _, pass := range []bool{false, true} {
		for i, r := range results {
			if n < ShownResults && !keep[i] && routine[r.Outcome] == pass {
				keep[i] = true
				n++
			}
		}
	}
	var shown []etcdwrite.Result
	left := map[etcdwrite.Outcome]int{}
	var order []etcdwrite.Outcome
	for i, r := range results {
		if keep[i] {
			shown = append(shown, r)
			continue
		}
		if left[r.Outcome] == 0 {
			order = append(order, r.Outcome)
		}
		left[r.Outcome]++
	}
	var parts []string
	for _, o := range order {
		parts = append(parts, fmt.Sprintf("%d %s", left[o], o))
	}
	return shown, fmt.Sprintf("… and %d more (%s): -o json lists every key.", len(results)-len(shown), strings.Join(parts, ", "))
}

// ResultRows are the keys of a repair with their outcome.
func ResultRows(results []etcdwrite.Result) []Row {
	return RowsOf(results, func(r *etcdwrite.Result) string { return r.Key })
}

// RefusedError says why results with refused keys (their namespace or CRD
// was created again since the purge) fail a command; nil when none is.
func RefusedError(results []etcdwrite.Result) error {
	n := 0
	var first etcdwrite.Result
	for _, r := range results {
		if r.Outcome == etcdwrite.Refused {
			if n == 0 {
				first = r
			}
			n++
		}
	}
	if n == 0 {
		return nil
	}
	return fmt.Errorf("%s refused, not restored (%s: %s)", plural.Verb(n, "key", "was", "were"), table.Escape(first.Key), table.Escape(first.Detail))
}

// StillPresentError says why results whose writes did not all stick fail
// a command; nil when they all did.
func StillPresentError(results []etcdwrite.Result) error {
	for _, r := range results {
		if r.Outcome == etcdwrite.StillPresent {
			return fmt.Errorf("some keys were not restored (%s: %s)", table.Escape(r.Key), table.Escape(r.Detail))
		}
	}
	return nil
}

// ConflictError says why results fail a command: a key refused (as
// RefusedError), in conflict, still present, unverified, or a claim
// restored without its volume; nil when nothing is.
func ConflictError(results []etcdwrite.Result) error {
	if err := RefusedError(results); err != nil {
		return err
	}
	for _, r := range results {
		if r.Outcome == etcdwrite.Conflict || r.Outcome == etcdwrite.StillPresent || r.Outcome == etcdwrite.Unverified {
			return fmt.Errorf("some keys were not restored (%s: %s)", table.Escape(r.Key), table.Escape(r.Detail))
		}
		if r.Outcome == etcdwrite.RestoredWithoutVolume {
			return fmt.Errorf("a claim was restored without its volume (%s: %s)", table.Escape(r.Key), table.Escape(r.Detail))
		}
	}
	return nil
}
