package cmd

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/regghost/regghost/internal/cli"
	"github.com/regghost/regghost/internal/render"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/leases"
	"github.com/regghost/regghost/pkg/pace"
	"github.com/regghost/regghost/pkg/session"
	"github.com/regghost/regghost/pkg/table"
)

type leasesOptions struct {
	noCompletion
	cli.WriteFlags
	namespace string
	eventTTL  time.Duration
	maxCount  int
	pacing    etcdwrite.Pacing
	*render.PrintFlags
}

func newLeasesCmd(g *globalOptions) *cobra.Command {
	o := &leasesOptions{PrintFlags: render.NewPrintFlags(true, "table")}
	c := &cobra.Command{
		Use:   "leases [-n NAMESPACE]",
		Short: "Audit etcd's leases (events past their TTL or with none, leases too big to revoke, stale masterleases) and remove what outlived its TTL",
		Args:  cobra.NoArgs,
		RunE:  runE(g, o),
	}
	f := c.Flags()
	f.StringVarP(&o.namespace, "namespace", "n", "", "judge only this namespace's events (the leases are the whole keyspace's)")
	f.DurationVar(&o.eventTTL, "event-ttl", 0, "kube-apiserver's --event-ttl (default: read from this node's kube-apiserver, else 1h)")
	f.IntVar(&o.maxCount, "lease-max-object-count", 0, "the most keys a lease may hold before it is too big to revoke safely (default 1000, the most kube-apiserver puts on one lease)")
	o.WriteFlags.Add(c, "really delete the events past their TTL and the stale masterleases (without it leases is read-only)", "where the removal's backup goes")
	cli.PacingVar(f, &o.pacing)
	o.AddFlags(c)
	return c
}

func (o *leasesOptions) validate(g *globalOptions) error {
	if err := validateScanInput(o.namespace); err != nil {
		return err
	}
	if o.eventTTL < 0 || o.maxCount < 0 {
		return cli.Usage("--event-ttl and --lease-max-object-count must not be negative (0: the default)")
	}
	if o.Confirm {
		if err := refuseDB(g, "leases --confirm"); err != nil {
			return err
		}
	}
	return cli.CheckPacing(o.pacing)
}

func (o *leasesOptions) run(ctx context.Context, g *globalOptions, s genericiooptions.IOStreams) error {
	// On a node whose cores are all busy, etcd's and kube-apiserver's
	// threads run before the audit's decoding and the removal's.
	if err := yield(leases.Nice); err != nil {
		g.Notices.Warn(err.Error())
	}
	r, err := g.Leases(ctx, session.LeasesRequest{Namespace: o.namespace, Given: leases.Given{EventTTL: o.eventTTL, MaxObjectCount: o.maxCount},
		Remove: o.Confirm, Pacing: o.pacing, Now: clock})
	if err != nil {
		return err
	}
	defer r.Close()
	if r.DB || !o.Confirm || r.Plan.Keys() == 0 {
		// The audit alone: a dry run, nothing to remove, or a copy of etcd
		// (audited, never removed from).
		out := render.Leases(r.Audit, r.Settings)
		if !r.DB {
			out = render.LeasesPlan(r.Audit, r.Settings, r.Plan, !o.Confirm)
		}
		if err := o.Print(s.Out, out); err != nil {
			return err
		}
		return foundFaults(r.Audit)
	}
	if err := render.LeasesPlan(r.Audit, r.Settings, r.Plan, false).Human(table.NewSafeWriter(o.PlanWriter(s.Out, s.ErrOut)), false, false); err != nil {
		return err
	}
	if err := r.Fits(ctx); err != nil {
		return err
	}
	if err := o.Ask(s.In, s.ErrOut, fmt.Sprintf("Back up and delete %s?", render.Plural(r.Plan.Keys(), "key"))); err != nil {
		return err
	}
	if err := r.Connect(ctx); err != nil {
		return err
	}
	stop, doneWriting := etcdwrite.StopOnSignal(g.Notices)
	defer doneWriting()
	res, err := r.Remove(ctx, o.BackupDir, stop)
	if res == nil {
		return err
	}
	if err := o.PrintResult(s.Out, render.LeasesRemoved(res), err); err != nil {
		return err
	}
	if res.LeftSome(r.Plan) {
		return cli.Exit(ExitGhosts, nil)
	}
	return nil
}

// foundFaults is the exit of an audit: 3 when it found a fault.
func foundFaults(a *leases.Audit) error {
	if a.Faults() > 0 {
		return cli.Exit(ExitGhosts, nil)
	}
	return nil
}

// yield is pace.Yield; the tests, whose etcd runs in their own process,
// replace it.
var yield = pace.Yield
