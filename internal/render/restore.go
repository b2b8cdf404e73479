package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/flagnames"
	"github.com/regghost/regghost/pkg/plural"
	"github.com/regghost/regghost/pkg/table"
)

// RestoreCounts are how many keys of a restore's plan would be written,
// and how many are refused.
func RestoreCounts(plan []etcdwrite.Result) (todo, refused int) {
	for _, r := range plan {
		switch r.Outcome {
		case etcdwrite.WouldRestore:
			todo++
		case etcdwrite.Refused:
			refused++
		}
	}
	return todo, refused
}

// WriteRestoreResults writes the outcome of each key of a restore. With
// summary (snapshot restore: a whole snapshot holds many keys that are
// present) only the keys it writes, or would, are listed, the others
// counted.
func WriteRestoreResults(out io.Writer, results []etcdwrite.Result, summary bool) {
	if !summary {
		Results(out, results)
		return
	}
	var shown []etcdwrite.Result
	count := map[etcdwrite.Outcome]int{}
	for _, r := range results {
		count[r.Outcome]++
		if r.Outcome != etcdwrite.AlreadyPresent && r.Outcome != etcdwrite.Conflict {
			shown = append(shown, r)
		}
	}
	Results(out, shown)
	table.Wrapped(out, fmt.Sprintf("%s present with the snapshot's bytes and %d present with other bytes are left alone.", plural.Of(count[etcdwrite.AlreadyPresent], "key"), count[etcdwrite.Conflict]))
}

// refusedLine says what was refused and how to write it deliberately. A
// key refused for its namespace or CustomResourceDefinition (created again,
// or gone) is written by flagnames.IntoRecreated, and its reason names the
// flag; one refused for what its bytes need (a version its CRD no longer
// lists, the Service an APIService calls) has no flag: its reason says
// what to do first.
func refusedLine(w io.Writer, results []etcdwrite.Result) {
	into, other := 0, 0
	for _, r := range results {
		switch {
		case r.Outcome != etcdwrite.Refused:
		case strings.Contains(r.Detail, flagnames.IntoRecreated):
			into++
		default:
			other++
		}
	}
	refused := into + other
	switch {
	case refused == 0:
	case other == 0:
		table.Wrapped(w, fmt.Sprintf("Refused %s: the namespace or CustomResourceDefinition each rests on was created again since the backup, or is gone (each reason above); %s in the backup, and %s writes %s into one that exists.", plural.Of(refused, "key"), plural.Pick(refused, "it stays", "they stay"), flagnames.IntoRecreated, plural.Them(refused)))
	case into == 0:
		table.Wrapped(w, fmt.Sprintf("Refused %s: written back, %s would break what another command proved gone (each reason above, with what to do first); %s in the backup.", plural.Of(refused, "key"), plural.Pick(refused, "it", "they"), plural.Pick(refused, "it stays", "they stay")))
	default:
		table.Wrapped(w, fmt.Sprintf("Refused %s (each reason above); they stay in the backup. %s writes the %d whose namespace or CustomResourceDefinition was created again into the one that exists; the other %d need what their reason names first.", plural.Of(refused, "key"), flagnames.IntoRecreated, into, other))
	}
}

// RestorePlan is what restoring the backup at path, of entries keys,
// would do (a dry run, or --confirm with nothing to write) in every form
// -o can ask for; its rows are the keys with their outcome.
func RestorePlan(path string, entries int, plan []etcdwrite.Result, dryRun, summary bool) Output {
	todo, refused := RestoreCounts(plan)
	return Output{Doc: map[string]any{"dryRun": dryRun, "results": plan}, Rows: ResultRows(plan), Human: func(w io.Writer, _, _ bool) error {
		WriteRestoreResults(w, plan, summary)
		switch {
		case todo == 0 && refused > 0:
			table.Wrapped(w, fmt.Sprintf("Nothing to restore: every key of %s (%d) is present already, in conflict or refused. Nothing was changed.", path, entries))
		case todo == 0:
			table.Wrapped(w, fmt.Sprintf("Nothing to restore: every key of %s (%d) is present already or in conflict.", path, entries))
		default:
			fmt.Fprintln(w)
			table.Wrapped(w, fmt.Sprintf("Dry run: %d of %s would be restored. Nothing was changed. Re-run with --confirm.", todo, plural.Of(entries, "key")))
		}
		refusedLine(w, plan)
		return nil
	}}
}

// RestoreResult is a finished restore; its rows are the keys with their
// outcome.
func RestoreResult(results []etcdwrite.Result, summary bool) Output {
	return Output{Doc: map[string]any{"dryRun": false, "results": results}, Rows: ResultRows(results), Human: func(w io.Writer, _, _ bool) error {
		fmt.Fprintln(w)
		WriteRestoreResults(w, results, summary)
		n, refused := 0, 0
		for _, r := range results {
			switch r.Outcome {
			case etcdwrite.Restored, etcdwrite.RestoredWithoutVolume:
				n++
			case etcdwrite.Refused:
				refused++
			}
		}
		fmt.Fprintf(w, "Restored %s, byte-identical to the backup.\n", plural.Of(n, "key"))
		refusedLine(w, results)
		return nil
	}}
}

// UndoRecoveryCount is how many keys undoing a recovery would delete.
func UndoRecoveryCount(plan []etcdwrite.Result) int {
	todo := 0
	for _, r := range plan {
		if r.Outcome == etcdwrite.WouldDelete {
			todo++
		}
	}
	return todo
}

// UndoRecoveryPlan is what restoring the recovery's backup at path, of
// entries keys, would delete (a dry run, or --confirm with nothing to
// delete) in every form -o can ask for.
func UndoRecoveryPlan(path string, entries int, plan []etcdwrite.Result, dryRun bool) Output {
	todo := UndoRecoveryCount(plan)
	return Output{Doc: map[string]any{"dryRun": dryRun, "undo": "recover", "results": plan}, Rows: ResultRows(plan), Human: func(w io.Writer, _, _ bool) error {
		table.Wrapped(w, fmt.Sprintf("%s is a recovery's backup: restoring it deletes the keys the recovery wrote, those still as it wrote them.", path))
		Results(w, plan)
		fmt.Fprintln(w)
		if todo == 0 {
			table.Wrapped(w, "Nothing to undo: every key the recovery wrote is gone, changed since, or refused. Nothing was changed.")
		} else {
			table.Wrapped(w, fmt.Sprintf("Dry run: %d of %s would be deleted. Nothing was changed. Re-run with --confirm.", todo, plural.Of(entries, "key")))
		}
		return nil
	}}
}

// UndoRecoveryResult is what undoing the recovery whose backup is at path
// did, in every form -o can ask for.
func UndoRecoveryResult(path string, results []etcdwrite.Result) Output {
	return Output{Doc: map[string]any{"dryRun": false, "undo": "recover", "results": results}, Rows: ResultRows(results), Human: func(out io.Writer, _, _ bool) error {
		n := 0
		for _, r := range results {
			if r.Outcome == etcdwrite.Deleted {
				n++
			}
		}
		fmt.Fprintln(out)
		Results(table.NewSafeWriter(out), results)
		fmt.Fprintf(out, "Deleted %s the recovery wrote; the backup %s still holds %s.\n", plural.Of(n, "key"), path, plural.Them(n))
		return nil
	}}
}
