package render

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/regghost/regghost/pkg/plural"
	"github.com/regghost/regghost/pkg/table"
	"github.com/regghost/regghost/pkg/unstick"
)

// UnstickPlan is unstick's analysis (without --confirm) in every form -o
// can ask for; its rows are the objects whose finalizers hold the deletion.
func UnstickPlan(a *unstick.Analysis) Output {
	return Output{Doc: a, Rows: blockerRows(a), Human: func(w io.Writer, _, _ bool) error {
		UnstickAnalysis(w, a)
		if a.Refusal != "" && a.Exists && a.Terminating {
			fmt.Fprintln(w)
			table.Para(w, "Would be refused: ", "  ", a.Refusal+".")
		} else if a.Refusal == "" {
			fmt.Fprintln(w)
			table.Wrapped(w, unstickDryRunFooter(a))
		}
		return nil
	}}
}

func blockerRows(a *unstick.Analysis) []Row {
	return RowsOf(a.Blockers, func(b *unstick.Blocker) string { return b.Key })
}

// UnstickResult is a finished unstick, having waited wait for the deletion;
// its rows are the keys with their outcome.
func UnstickResult(a *unstick.Analysis, res *unstick.Result, wait time.Duration) Output {
	return Output{Doc: map[string]any{"analysis": a, "result": res}, Rows: ResultRows(res.Results), Human: func(out io.Writer, _, _ bool) error {
		fmt.Fprintln(out)
		table.Wrapped(out, "Backup "+res.Backup+" (verified)")
		fmt.Fprintln(out)
		Results(out, res.Results)
		switch {
		case res.Recreated:
			fmt.Fprintln(out)
			table.Wrapped(out, a.Target+" was deleted and created again since it was reviewed (another UID): the one reviewed is gone, and nothing was done to the new one.")
		case res.Finished && res.Left == 0:
			fmt.Fprintf(out, "\n%s is gone, and nothing of it is left in etcd.\n", a.Target)
		case res.Finished:
			fmt.Fprintf(out, "\n%s is gone, but %s left in etcd: %s (see regghost scan).\n", a.Target, plural.Verb(res.Left, "key", "of it is", "of its keys are"), plural.Pick(res.Left, "a ghost", "ghosts"))
		default:
			fmt.Fprintf(out, "\n%s is still there after %s; %s left in etcd.\n", a.Target, wait, plural.Verb(res.Left, "key", "of it is", "of it are"))
		}
		for _, dir := range res.Dirs {
			if res.Finished {
				table.Para(out, "", "  ", fmt.Sprintf("Backup of what was changed: %s (restore refuses what would land in the %s that no longer exists, and puts back what can live without it)", dir, strings.Fields(a.Target)[0]))
			} else {
				table.LabeledCommand(out, "Undo:", "regghost restore "+dir+" --confirm")
			}
		}
		if down := a.DownDeleted(res.Results); len(down) > 0 && len(res.Dirs) > 0 {
			// The APIServices' backup is the first one written.
			fmt.Fprintln(out)
			for _, l := range down {
				table.Para(out, "", "  ", l+":")
			}
			table.LabeledCommand(out, "Put back:", "regghost restore "+res.Dirs[0]+" --confirm")
		}
		return nil
	}}
}

// UnstickAnalysis writes the chain that holds a deletion, and the next action,
// wrapped to the screen. The blockers are a table whose rows are grouped by
// what serves their finalizers, said once above each group as scan says
// its reasons (-o wide: a SERVED BY column instead).
func UnstickAnalysis(out io.Writer, a *unstick.Analysis) {
	if a.NoAPI != "" {
		table.Para(out, "", "  ", "The API server was not reached ("+a.NoAPI+"): what follows is read from etcd alone, and unstick, which acts through the API server, cannot act.")
	}
	switch {
	case !a.Exists:
		table.Wrapped(out, fmt.Sprintf("%s: no %s key.", a.Target, a.Key))
	case a.Terminating:
		table.Wrapped(out, fmt.Sprintf("%s: Terminating for %s; finalizers [%s]", a.Target, a.Since, strings.Join(a.Finalizers, ", ")))
	default:
		table.Wrapped(out, fmt.Sprintf("%s: not terminating.", a.Target))
	}
	for _, c := range a.Conditions {
		table.Para(out, "  condition ", "    ", c)
	}
	for _, u := range a.Unavailable {
		table.Para(out, "  unavailable: ", "    ", u)
	}
	fmt.Fprintf(out, "  %s left in etcd, %d held by finalizers\n", plural.Of(a.Remaining, "key"), len(a.Blockers))
	if len(a.Blockers) > 0 {
		wide := table.Full(out)
		hdr := []string{"KEY", "FINALIZERS", "TO REMOVE"}
		if wide {
			hdr = append(hdr, "SERVED BY")
		}
		t := table.New(out, hdr...).CutFirst(1, 2)
		cells := func(b unstick.Blocker) []string {
			fins := strings.Join(b.Finalizers, ", ")
			if b.Spec {
				fins = "spec: " + fins
			}
			return []string{b.Key, fins, strings.Join(b.Remove, ", ")}
		}
		var order []string
		byServed := map[string][]unstick.Blocker{}
		for _, b := range a.Blockers {
			served := strings.Join(b.Served, "; ")
			if wide {
				_ = t.Append(append(cells(b), served))
				continue
			}
			if _, ok := byServed[served]; !ok {
				order = append(order, served)
			}
			byServed[served] = append(byServed[served], b)
		}
		// Blockers whose finalizers nothing is said to serve first: no
		// comment line above them.
		table.EmptyFirst(order)
		for _, served := range order {
			if served != "" {
				t.Comment(served)
			}
			for _, b := range byServed[served] {
				_ = t.Append(cells(b))
			}
		}
		_ = t.Render()
	}
	for _, u := range a.Unreadable {
		table.Para(out, "  cannot be read here: ", "    ", u)
	}
	table.Wrapped(out, fmt.Sprintf("Next: %s.", a.Next))
}

// WriteRevealed lists the objects whose finalizers only the APIServices'
// deletion revealed, before unstick asks whether to remove them too.
func WriteRevealed(out io.Writer, more []unstick.Blocker) {
	table.Para(out, "", "", fmt.Sprintf("With the dangling APIService deletion done, the namespace controller went on: %s held by finalizers nobody serves, which the plan did not show:", plural.Verb(len(more), "more object", "is", "are")))
	for _, b := range more {
		table.Wrapped(out, "  "+table.Escape(b.Key)+": remove "+table.Escape(strings.Join(b.Remove, ", ")))
	}
}

// unstickDryRunFooter says what --confirm would do with this plan: delete
// the APIServices it names and annotate the namespace for its controller
// to look again, remove the finalizers it lists, or both.
func unstickDryRunFooter(a *unstick.Analysis) string {
	var do []string
	if n := len(a.DeleteAPIServices); n > 0 {
		do = append(do, "delete the "+plural.Pick(n, "APIService", "APIServices")+" named above (backed up)")
	}
	if a.Nudge != nil {
		do = append(do, a.Nudge.Describe("annotate"))
	}
	if a.Removable() > 0 {
		do = append(do, "remove the finalizers above")
	}
	if len(do) == 0 {
		return "Dry run: nothing was changed."
	}
	return "Dry run: nothing was changed. Re-run with --confirm to " + strings.Join(do, ", then ") + "."
}
