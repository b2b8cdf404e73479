package cmd

import (
	"context"
	"fmt"
	"io"

	"github.com/regghost/regghost/internal/cli"
	"github.com/regghost/regghost/internal/render"
	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/plural"
	"github.com/regghost/regghost/pkg/table"
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
	todo := render.UndoRecoveryCount(plan)
	if !f.confirm || todo == 0 {
		if err := f.print.Print(out, render.UndoRecoveryPlan(path, len(b.Entries), plan, !f.confirm)); err != nil {
			return err
		}
		return cli.Failed(render.RefusedError(plan))
	}
	render.Results(table.NewSafeWriter(out), plan)
	if err := cli.Confirm(in, g.errOut, f.yes, fmt.Sprintf("Delete the %s the recovery wrote?", plural.Of(todo, "key"))); err != nil {
		return err
	}
	stop, doneWriting := etcdwrite.StopOnSignal(g.Notices)
	defer doneWriting()
	r.Pacing = etcdwrite.Pacing{Stop: stop, MaxRequestBytes: g.Etcd.MaxRequestBytes}
	results, err := r.Run(ctx)
	render.WriteUndoRecoveryResult(out, path, results)
	if err != nil {
		return err
	}
	return cli.Failed(render.ConflictError(results))
}
