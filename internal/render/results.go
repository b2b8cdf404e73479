package render

import (
	"fmt"
	"github.com/regghost/regghost/pkg/plural"
	"io"

	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/table"
)

// Results writes the outcome of each key, in order. DETAIL is cut to fit;
// each detail cut is written whole below the table, on lines of its own
// under its outcome and key (or how many keys share it), wrapped.
func Results(out io.Writer, results []etcdwrite.Result) {
	if len(results) == 0 {
		return
	}
	t := table.New(out, "KEY", "OUTCOME", "DETAIL")
	t.Quiet = true
	for _, r := range results {
		_ = t.Append([]string{r.Key, string(r.Outcome), r.Detail})
	}
	_ = t.Render()
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
