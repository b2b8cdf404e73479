package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/regghost/regghost/internal/cli"
	"github.com/regghost/regghost/internal/render"
	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/plural"
	"github.com/regghost/regghost/pkg/repair"
	"github.com/regghost/regghost/pkg/snapshot"
	"github.com/regghost/regghost/pkg/table"
)

func newRestoreCmd(g *globalOptions) *cobra.Command {
	o := &restoreOptions{PrintFlags: render.NewPrintFlags(true, "table")}
	c := &cobra.Command{
		Use:   "restore BACKUP",
		Short: "Put back what a backup holds, or undo a recovery (dry run without --confirm)",
		Args:  cobra.ExactArgs(1),
		RunE:  runE(g, o),
	}
	o.addFlags(c, "backup")
	return c
}

// restoreOptions are the choices of restore and snapshot restore.
type restoreOptions struct {
	unbounded
	confirm, yes bool
	// other writes a backup of another cluster, and its grants.
	other cli.OtherClusterFlags
	// intoRecreated writes keys into a namespace or CRD created again
	// since the purge.
	intoRecreated bool
	*render.PrintFlags
	// summary prints only the keys restore writes (or would), with the
	// others counted: a whole snapshot holds many keys that are present.
	summary bool
	// path is BACKUP (FILE, for snapshot restore).
	path string
}

// addFlags adds the flags restore and snapshot restore share; source
// names what they write from.
func (f *restoreOptions) addFlags(c *cobra.Command, source string) {
	c.Flags().BoolVar(&f.confirm, "confirm", false, "really write the keys back")
	c.Flags().BoolVar(&f.yes, "yes", false, cli.YesHelp)
	f.other.Add(c, source)
	cli.IntoRecreatedVar(c.Flags(), &f.intoRecreated)
	f.AddFlags(c)
}

func (f *restoreOptions) complete(_ *globalOptions, _ *cobra.Command, args []string) error {
	f.path = args[0]
	return nil
}

func (f *restoreOptions) validate(g *globalOptions) error {
	path := f.path
	if err := refuseDB(g, "restore"); err != nil {
		return err
	}
	if snapshot.IsLogical(path) {
		return cli.Usage("%s is a logical snapshot of kine, not a regghost backup: `regghost snapshot restore %s` puts back what it holds, `regghost recover --snapshot %s` chosen objects; restore takes a backup directory (backup ls lists them)", path, path, path)
	}
	if backup.SourceOf(path) == backup.SourceSnapshot {
		return cli.Usage("%s is an etcd snapshot, not a regghost backup: `regghost recover --snapshot %s` brings chosen objects back from it (-n NAMESPACE, or their keys); restore takes a backup directory (backup ls lists them)", path, path)
	}
	return nil
}

func (f *restoreOptions) run(ctx context.Context, g *globalOptions, s genericiooptions.IOStreams) error {
	path := f.path
	release, err := backup.Hold(backup.DirOf(path))
	if err != nil {
		return fmt.Errorf("%w; nothing was restored", err)
	}
	defer release()
	b, err := backup.ReadBackup(path)
	if err != nil {
		return fmt.Errorf("%w; nothing was restored", err)
	}
	if b.Action == backup.ActionRecover {
		return f.undoRecovery(ctx, g, b, path, backup.DirOf(path), s)
	}
	return f.restoreBackup(ctx, g, b, path, backup.DirOf(path), s)
}

// restoreBackup writes back b's absent keys (a dry run without confirm) and
// appends what it did to the audit log in auditDir.
func (f *restoreOptions) restoreBackup(ctx context.Context, g *globalOptions, b *backup.Backup, path, auditDir string, s genericiooptions.IOStreams) error {
	ctx, r, done, err := f.restorer(ctx, g, b, path, auditDir)
	if err != nil {
		return err
	}
	defer done()
	plan, err := r.Plan(ctx)
	if err != nil {
		return err
	}
	todo, _ := render.RestoreCounts(plan)
	if !f.confirm || todo == 0 {
		if err := f.Print(s.Out, render.RestorePlan(path, len(b.Entries), plan, !f.confirm, f.summary)); err != nil {
			return err
		}
		if f.summary {
			return cli.Failed(render.RefusedError(plan))
		}
		return cli.Failed(render.ConflictError(plan))
	}
	planOut := f.PlanWriter(s.Out, s.ErrOut)
	render.WriteRestoreResults(table.NewSafeWriter(planOut), plan, f.summary)
	if err := cli.Confirm(s.In, s.ErrOut, f.yes, fmt.Sprintf("Write %s back into etcd?", plural.Of(todo, "key"))); err != nil {
		return err
	}
	stop, doneWriting := etcdwrite.StopOnSignal(g.Notices)
	defer doneWriting()
	r.Pacing.Stop = stop
	results, err := r.Run(ctx)
	if results == nil {
		return err
	}
	if perr := f.Print(s.Out, render.RestoreResult(results, f.summary)); perr != nil {
		return perr
	}
	if err != nil {
		return err
	}
	if f.summary {
		if err := render.StillPresentError(results); err != nil {
			return cli.Failed(err)
		}
		return cli.Failed(render.RefusedError(results))
	}
	return cli.Failed(render.ConflictError(results))
}

// restorer opens etcd for putting a backup's keys back (or undoing a
// recovery) through the protected write.
func (f *restoreOptions) restorer(ctx context.Context, g *globalOptions, b *backup.Backup, path, auditDir string) (context.Context, *repair.Restorer, func(), error) {
	r := &repair.Restorer{Backup: b, Path: path, AuditDir: auditDir, OtherCluster: f.other.Cluster, OtherClusterGrants: f.other.Grants,
		Options: repair.RestoreOptions{IntoRecreated: f.intoRecreated}}
	ctx, done, err := g.Restorer(ctx, r)
	return ctx, r, done, err
}
