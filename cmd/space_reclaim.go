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
	"github.com/regghost/regghost/pkg/plural"
	"github.com/regghost/regghost/pkg/reclaim"
	"github.com/regghost/regghost/pkg/table"
)

type spaceReclaimOptions struct {
	unbounded
	cli.WriteFlags
	dataDirs   []string
	quota      int64
	memberWait time.Duration
	*render.PrintFlags
	// Completed:
	dirs       map[string]string
	quotaGiven bool
}

// newSpaceReclaimCmd is `regghost space reclaim`.
func newSpaceReclaimCmd(g *globalOptions) *cobra.Command {
	o := &spaceReclaimOptions{PrintFlags: render.NewPrintFlags(true, "table")}
	c := &cobra.Command{
		Use:   "reclaim",
		Short: "Give etcd its space back: snapshot, compact, defragment, disarm (dry run without --confirm)",
		Args:  cobra.NoArgs,
		RunE:  runE(g, o),
	}
	f := c.Flags()
	o.WriteFlags.Add(c, "really snapshot, compact, defragment and disarm (without it reclaim only says what it would do)", "where the snapshot goes")
	f.StringArrayVar(&o.dataDirs, "data-dir", nil, "a member's data directory on this node, to check its disk holds the rewrite: NAME=DIR, or DIR for the member on this node")
	o.quota = reclaim.DefaultQuota
	f.Var(cli.Quantity{V: &o.quota}, "quota-backend-bytes", "the quota of a member that cannot say its own (etcd before 3.6 without reachable /metrics): bytes, or a quantity such as 8Gi")
	f.DurationVar(&o.memberWait, "wait", time.Minute, "how long to wait for a defragmented member to come back healthy before reclaim stops")
	o.AddFlags(c)
	return c
}

func (o *spaceReclaimOptions) complete(_ *globalOptions, c *cobra.Command, _ []string) error {
	o.quotaGiven = c.Flags().Changed("quota-backend-bytes")
	return nil
}

func (o *spaceReclaimOptions) validate(g *globalOptions) error {
	if err := refuseDB(g, "space reclaim"); err != nil {
		return err
	}
	var err error
	if o.dirs, err = reclaim.ParseDataDirs(o.dataDirs); err != nil {
		return err
	}
	if o.quota == 0 {
		return cli.Usage("--quota-backend-bytes must not be 0 (negative: no quota)")
	}
	return nil
}

func (o *spaceReclaimOptions) run(parent context.Context, g *globalOptions, s genericiooptions.IOStreams) error {
	ctx, cancel := context.WithTimeout(parent, g.Etcd.CommandTimeout)
	defer cancel()
	ro, done, err := reclaim.Setup(ctx, &g.Settings, reclaim.Options{DataDirs: o.dirs, Quota: o.quota, QuotaGiven: o.quotaGiven,
		BackupRoot: o.BackupDir, MemberWait: o.memberWait, Now: clock, Holder: "regghost space reclaim", Notices: g.Notices})
	if err != nil {
		return err
	}
	defer done()
	plan, err := reclaim.Survey(ctx, ro)
	if err != nil {
		return err
	}
	if !o.Confirm {
		if err := o.Print(s.Out, render.ReclaimPlan(plan, true)); err != nil {
			return err
		}
		g.Notices.Warn(plan.Warnings...)
		return nil
	}
	if len(plan.Refusals) > 0 {
		if err := o.Print(s.Out, render.ReclaimPlan(plan, false)); err != nil {
			return err
		}
		return cli.Failed(fmt.Errorf("refused: %s; nothing was changed", strings.Join(plan.Refusals, "; ")))
	}
	planOut := table.NewSafeWriter(o.PlanWriter(s.Out, s.ErrOut))
	render.WriteReclaimPlan(planOut, plan)
	if err := planOut.Flush(); err != nil {
		return err
	}
	// What the plan warns of (under NOSPACE: this node's lock alone) is
	// said before the question, and Run does not say it again.
	g.Notices.Warn(plan.Warnings...)
	ro.Warned = plan.Warnings
	if err := o.Ask(s.In, s.ErrOut, fmt.Sprintf("Snapshot, compact and defragment the %s of etcd?", plural.Of(len(plan.Members), "member"))); err != nil {
		return err
	}
	fmt.Fprintln(planOut)
	ro.Progress = func(step reclaim.Step) {
		render.ReclaimStep(planOut, step)
		_ = planOut.Flush()
	}
	// --command-timeout counts from the answer, not from the question.
	rctx, rcancel := context.WithTimeout(parent, g.Etcd.CommandTimeout)
	defer rcancel()
	res, err := reclaim.Run(rctx, ro)
	if res == nil {
		return err
	}
	return cli.Failed(o.PrintResult(s.Out, render.ReclaimResult(res), err))
}
