package cmd

import (
	"context"
	"fmt"
	"io"

	"github.com/regghost/regghost/internal/table"
	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdwrite"
)

// undoRecovery deletes what a recovery wrote (restore of a recovery's
// backup): each key only while it holds what the recovery wrote.
func undoRecovery(ctx context.Context, g *globalOptions, b *backup.Backup, path, auditDir string, f restoreFlags, in io.Reader, out io.Writer) error {
	ctx, r, done, err := restorer(ctx, g, b, path, auditDir, f)
	if err != nil {
		return err
	}
	defer done()
	plan, err := r.Plan(ctx)
	if err != nil {
		return err
	}
	todo := 0
	for _, r := range plan {
		if r.Outcome == etcdwrite.WouldDelete {
			todo++
		}
	}
	if !f.confirm || todo == 0 {
		if err := f.print.print(out, output{doc: map[string]any{"dryRun": !f.confirm, "undo": "recover", "results": plan}, rows: resultRows(plan), human: func(w io.Writer, _, _ bool) error {
			table.Wrapped(w, fmt.Sprintf("%s is a recovery's backup: restoring it deletes the keys the recovery wrote, those still as it wrote them.", path))
			printResults(w, plan)
			fmt.Fprintln(w)
			if todo == 0 {
				table.Wrapped(w, "Nothing to undo: every key the recovery wrote is gone, changed since, or refused. Nothing was changed.")
			} else {
				table.Wrapped(w, fmt.Sprintf("Dry run: %d of %d keys would be deleted. Nothing was changed. Re-run with --confirm.", todo, len(b.Entries)))
			}
			return nil
		}}); err != nil {
			return err
		}
		return refusedErr(plan)
	}
	printResults(table.NewSafeWriter(out), plan)
	if err := confirmAction(in, g.errOut, f.yes, fmt.Sprintf("Delete the %d keys the recovery wrote?", todo)); err != nil {
		return err
	}
	stop, doneWriting := stopOnSignal(g.errOut)
	defer doneWriting()
	r.Pacing = etcdwrite.Pacing{Stop: stop}
	results, err := r.Run(ctx)
	n := 0
	for _, r := range results {
		if r.Outcome == etcdwrite.Deleted {
			n++
		}
	}
	fmt.Fprintln(out)
	printResults(table.NewSafeWriter(out), results)
	fmt.Fprintf(out, "Deleted %d keys the recovery wrote; the backup %s still holds them.\n", n, path)
	if err != nil {
		return err
	}
	return conflictErr(results)
}
