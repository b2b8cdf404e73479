package cmd

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/regghost/regghost/internal/cli"
	"github.com/regghost/regghost/internal/render"
	"github.com/regghost/regghost/pkg/catalog"
	"github.com/regghost/regghost/pkg/decrypt"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/migrate"
	"github.com/regghost/regghost/pkg/session"
)

type migrateOptions struct {
	// name is RESOURCE, the argument.
	name string
	cli.WriteFlags
	prune     bool
	perSecond int
	target    string
	*render.PrintFlags
}

func newMigrateCmd(g *globalOptions) *cobra.Command {
	o := &migrateOptions{PrintFlags: render.NewPrintFlags(true, "table")}
	c := &cobra.Command{
		Use:   "migrate RESOURCE",
		Short: "Move a resource's objects to its storage version and encryption key, and prove it from etcd",
		Args:  cobra.ExactArgs(1),
		RunE:  runE(g, o),
	}
	o.WriteFlags.Add(c, "really rewrite the objects through the API server (without it migrate only counts)", "regghost's backups, read for values under keys that no longer write")
	c.Flags().BoolVar(&o.prune, "prune-stored-versions", false, "once the count again leaves nothing at an old version, narrow the CRD's status.storedVersions to the versions still stored")
	c.Flags().StringVar(&o.target, "target-release", "", "judge a built-in resource's objects against what this Kubernetes release decodes (v1.37), before upgrading to it")
	c.Flags().IntVar(&o.perSecond, "max-objects-per-second", migrate.DefaultPerSecond, "pace of the rewrites through the API server")
	o.AddFlags(c)
	return c
}

func (o *migrateOptions) complete(_ *globalOptions, _ *cobra.Command, args []string) error {
	o.name = args[0]
	return nil
}

func (o *migrateOptions) validate(g *globalOptions) error {
	if _, err := catalog.ReleaseFor(o.target); o.target != "" && err != nil {
		return cli.Usage("--target-release: %v", err)
	}
	if o.perSecond <= 0 {
		return cli.Usage("--max-objects-per-second must be positive, got %d", o.perSecond)
	}
	if o.Confirm {
		return refuseDB(g, "migrate --confirm")
	}
	return nil
}

func (o *migrateOptions) run(ctx context.Context, g *globalOptions, s genericiooptions.IOStreams) error {
	rs, err := g.Open(ctx, session.ScanReads())
	if err != nil {
		return err
	}
	defer rs.Close()
	prep, err := migrate.Prepare(ctx, g.MigrateSource(rs), o.name, o.target)
	if err != nil {
		return err
	}
	plan := prep.Plan
	narrow, nerr := migrate.StoredVersionsProven(plan)
	pruneOnly := plan.Left() == 0 && o.prune && nerr == nil && narrow.Needed()
	if !o.Confirm || (plan.Left() == 0 && !pruneOnly) {
		keys, held, err := prep.Evidence(ctx, o.BackupDir)
		if err != nil {
			return err
		}
		if err := o.Print(s.Out, render.MigratePlan(plan, keys, held, o.prune, o.perSecond)); err != nil {
			return err
		}
		if err := migrate.Servable(plan); err != nil {
			// Its --confirm would be refused: the dry run says so.
			return cli.Failed(err)
		}
		if plan.Left() > 0 {
			return cli.Exit(ExitGhosts, nil)
		}
		return nil
	}
	if err := render.MigrateSteps(o.PlanWriter(s.Out, s.ErrOut), plan, o.prune, o.perSecond); err != nil {
		return err
	}
	if len(plan.Rewrite) == 0 && !pruneOnly {
		return cli.Exit(ExitError, fmt.Errorf("refused: nothing of %s can be rewritten (named above); nothing was changed", plan.Resource))
	}
	if rs.API == nil {
		return cli.Exit(ExitError, fmt.Errorf("refused: migrate writes through the API server (%s); nothing was changed", rs.Why))
	}
	dyn, readers, err := prep.Clients(o.perSecond)
	if err != nil {
		return err
	}
	if err := o.Ask(s.In, s.ErrOut, render.MigrateQuestion(plan, narrow, pruneOnly)); err != nil {
		return err
	}
	// Only a signal stops the rewrite (the command's deadline is its own
	// reason); a second one kills regghost. Nothing is said: the rewrite's
	// result says where it stopped.
	interrupted, stopListening := etcdwrite.StopOnSignal(nil)
	defer stopListening()
	sctx, etcd, done, err := g.Bounded(ctx)
	if err != nil {
		return err
	}
	defer done()
	protection := &migrate.Protection{Client: etcd, Prefix: g.Prefix, Decrypt: decrypt.Namespaces(rs.Decrypter), BackupRoot: o.BackupDir, Notices: g.Notices}
	res, err := migrate.Run(sctx, plan, migrate.Options{Dynamic: dyn, Again: prep.Again, History: prep.History, PruneStoredVersions: o.prune, Protect: protection,
		AskServers:   func(ctx context.Context) *migrate.Servers { return migrate.AskServers(ctx, rs.API) },
		ReadableWait: time.Minute, Readers: readers, BackupRoot: o.BackupDir, Rewrite: migrate.RewriteOptions{PerSecond: o.perSecond, Progress: render.EveryTenth(s.ErrOut, "rewrote", len(plan.Rewrite)), Stop: interrupted}})
	err = o.PrintResult(s.Out, render.MigrateResult(plan, res), err)
	if err != nil {
		return err
	}
	if res.Rewrite == nil || res.Rewrite.Stopped != "" || res.Proof == nil {
		return cli.Exit(ExitError, fmt.Errorf("%s did not finish: run the same command again, it reads what is left from etcd", plan.Resource))
	}
	if p := res.Proof; p.Left() > 0 {
		return cli.Exit(ExitError, fmt.Errorf("%s: %d objects left (named above)", plan.Resource, p.Left()))
	}
	return nil
}
