package cmd

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/regghost/regghost/internal/cli"
	"github.com/regghost/regghost/internal/render"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/flagnames"
	"github.com/regghost/regghost/pkg/impact"
	"github.com/regghost/regghost/pkg/repair"
	"github.com/regghost/regghost/pkg/session"
	"github.com/regghost/regghost/pkg/table"
)

type purgeOptions struct {
	cli.WriteFlags
	namespace        string
	keys             []string
	from             string
	forceClasses     []string
	pacing           etcdwrite.Pacing
	terminatingAfter time.Duration
	*render.PrintFlags
	singleWitness bool
	retainVolumes bool
	acceptImpacts []string
	// Completed:
	sel        repair.Selector
	impactOpts impact.Options
}

func newPurgeCmd(g *globalOptions) *cobra.Command {
	o := &purgeOptions{}
	c := &cobra.Command{
		Use:   "purge [KEY...]",
		Short: "Delete ghosts behind a verified snapshot and backup (dry run without --confirm)",
		RunE:  runE(g, o),
	}
	f := c.Flags()
	f.StringVarP(&o.namespace, "namespace", "n", "", "purge the ghosts of this namespace")
	f.StringVar(&o.from, "from", "", "a reviewed report of 'regghost scan -o json': purge only its keys, and only if unchanged since")
	f.StringArrayVar(&o.forceClasses, "force-class", nil, "also purge suspects of this class: "+etcdscan.ForceableNames()+" (never disputed)")
	o.WriteFlags.Add(c, "really delete (without it purge is a dry run)", "where snapshots and backups go")
	cli.PacingVar(f, &o.pacing)
	o.PrintFlags = render.NewPrintFlags(true, "table")
	f.DurationVar(&o.terminatingAfter, "terminating-after", etcdscan.DefaultTerminatingAfter, "stuck-terminating threshold used by the scan")
	o.AddFlags(c)
	f.BoolVar(&o.retainVolumes, impact.RetainVolumesFlag[2:], false, "set each bound PersistentVolume whose reclaim policy would destroy its storage to Retain (through the API server, backed up) before deleting its claim")
	f.StringArrayVar(&o.acceptImpacts, impact.AcceptImpactFlag[2:], nil, "go ahead although deleting sets this off, which a restore cannot undo: "+impact.Names(impact.Acceptable))
	f.BoolVar(&o.singleWitness, strings.TrimPrefix(flagnames.AcceptSingleWitness, "--"), false, "also delete ghosts only one witness could confirm (the API server could not be asked); the dry run lists them")
	return c
}

func (o *purgeOptions) complete(_ *globalOptions, _ *cobra.Command, args []string) error {
	o.keys = args
	return nil
}

// validate refuses bad input and reads --from's report, in the order the
// flags are checked: one line for the first mistake.
func (o *purgeOptions) validate(g *globalOptions) error {
	if err := validateScanInput(o.namespace); err != nil {
		return err
	}
	if err := refuseDB(g, "purge"); err != nil {
		return err
	}
	if err := cli.CheckPacing(o.pacing); err != nil {
		return err
	}
	if o.terminatingAfter <= 0 {
		return cli.Usage("--terminating-after must be positive, got %s", o.terminatingAfter)
	}
	o.sel = repair.Selector{Namespace: o.namespace, Keys: o.keys, AcceptSingleWitness: o.singleWitness}
	o.impactOpts = impact.Options{RetainVolumes: o.retainVolumes}
	var err error
	if o.sel.ForceClasses, err = etcdscan.ParseForceables(o.forceClasses); err != nil {
		return err
	}
	if o.impactOpts.Accept, err = impact.ParseKinds(o.acceptImpacts); err != nil {
		return err
	}
	if o.from != "" {
		rep, err := etcdscan.ReadReport(o.from)
		if err != nil {
			return err
		}
		o.sel.Reviewed = rep
	}
	if o.namespace == "" && len(o.keys) == 0 {
		return cli.Usage("purge needs --namespace or exact keys as arguments; a purge of the whole keyspace is not allowed")
	}
	return nil
}

func (o *purgeOptions) run(ctx context.Context, g *globalOptions, s genericiooptions.IOStreams) error {
	g.backupRoot = o.BackupDir
	r, err := g.PlanPurge(ctx, session.PurgeRequest{Selector: o.sel, Impact: o.impactOpts, BackupRoot: o.BackupDir, Pacing: o.pacing, Now: clock,
		Scan: func(ctx context.Context, rs *session.Read) (*etcdscan.Report, error) {
			return rs.Scan(ctx, g.scanning(session.ScanOptions{Namespace: o.namespace, TerminatingAfter: o.terminatingAfter}, false))
		}})
	if err != nil {
		return err
	}
	defer r.Close()
	plan := r.Plan
	if !o.Confirm || len(plan.Targets) == 0 {
		return o.Print(s.Out, render.PurgePlan(plan, !o.Confirm))
	}
	if err := plan.Refusal(); err != nil {
		if perr := o.Print(s.Out, render.PurgePlan(plan, true)); perr != nil {
			return perr
		}
		return err
	}
	planOut := o.PlanWriter(s.Out, s.ErrOut)
	if err := render.WritePurgePlan(table.NewSafeWriter(planOut), plan, false); err != nil {
		return err
	}
	fmt.Fprintf(planOut, "\nA snapshot and a backup go to %s first.\n", o.BackupDir)
	if err := o.Ask(s.In, s.ErrOut, fmt.Sprintf("Delete %s (%s) from etcd?", render.Plural(len(plan.Targets), "key"), plan.Scope)); err != nil {
		return err
	}
	if err := r.Connect(ctx); err != nil {
		return err
	}
	stop, doneWriting := etcdwrite.StopOnSignal(g.Notices)
	defer doneWriting()
	res, err := r.Purge(ctx, stop)
	if res == nil && err != nil {
		return err
	}
	err = o.PrintResult(s.Out, render.PurgeResult(res), err)
	if err != nil {
		return err
	}
	if res.Deleted != res.Planned {
		return cli.Exit(ExitGhosts, fmt.Errorf("deleted %d of %d planned keys; the rest were left alone (see above)", res.Deleted, res.Planned))
	}
	return nil
}
