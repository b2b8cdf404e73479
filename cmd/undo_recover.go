package cmd

import (
	"context"
	"fmt"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/regghost/regghost/internal/cli"
	"github.com/regghost/regghost/internal/render"
	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/plural"
	"github.com/regghost/regghost/pkg/table"
)

// undoRecovery deletes what a recovery wrote (restore of a recovery's
// backup): each key only while it holds what the recovery wrote.
func (f *restoreOptions) undoRecovery(ctx context.Context, g *globalOptions, b *backup.Backup, path, auditDir string, s genericiooptions.IOStreams) error {
	ctx, r, done, err := f.restorer(ctx, g, b, path, auditDir)
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
		if err := f.Print(s.Out, render.UndoRecoveryPlan(path, len(b.Entries), plan, !f.confirm)); err != nil {
			return err
		}
		return cli.Failed(render.RefusedError(plan))
	}
	render.Results(table.NewSafeWriter(f.PlanWriter(s.Out, s.ErrOut)), plan)
	if err := cli.Confirm(s.In, s.ErrOut, f.yes, fmt.Sprintf("Delete the %s the recovery wrote?", plural.Of(todo, "key"))); err != nil {
		return err
	}
	stop, doneWriting := etcdwrite.StopOnSignal(g.Notices)
	defer doneWriting()
	r.Pacing.Stop = stop
	results, err := r.Run(ctx)
	if err := f.PrintResult(s.Out, render.UndoRecoveryResult(path, results), err); err != nil {
		return err
	}
	return cli.Failed(render.ConflictError(results))
}
