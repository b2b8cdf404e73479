package cmd

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/regghost/regghost/internal/cli"
	"github.com/regghost/regghost/internal/render"
	"github.com/regghost/regghost/pkg/decrypt"
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
	// Read at the pace etcd's own latency allows (as members reads): the
	// audit is the removal's first step, and both run beside writers.
	reads := session.ScanReads()
	reads.Adaptive, reads.MinKeysPerSecond = true, leases.AuditFloor
	if o.Confirm {
		reads.MinKeysPerSecond = leases.RemovalFloor
	}
	rs, err := g.Open(ctx, reads)
	if err != nil {
		return err
	}
	defer rs.Close()
	given := leases.Given{EventTTL: o.eventTTL, MaxObjectCount: o.maxCount}
	pacing := o.pacing
	pacing.MaxRequestBytes = g.Etcd.MaxRequestBytes
	if o.Confirm {
		if err := leases.ShorterThanConfigured(given, g.Node); err != nil {
			return cli.Usage("%v", err)
		}
	}
	opts, settings, done, err := g.LeasesOptions(ctx, rs, o.namespace, given, clock)
	if err != nil {
		return err
	}
	defer done()
	// kine keeps no leases: a key's lease ID is its TTL, one key a txn.
	oneKey := opts.LeaseIsTTL
	if deadline, ok := ctx.Deadline(); ok && o.Confirm {
		// A removal whose slowest run cannot fit in --command-timeout is
		// refused before the audit reads anything.
		b, err := g.LeasesRemovalBudget(ctx, o.namespace, pacing, oneKey)
		if err != nil {
			return err
		}
		if err := b.Fits(time.Until(deadline), g.Etcd.CommandTimeout); err != nil {
			return cli.Usage("%v", err)
		}
	}
	a, err := leases.Run(ctx, rs.Store, opts)
	if err != nil {
		return err
	}
	if rs.DB {
		// A copy of etcd is audited, never removed from.
		if err := o.Print(s.Out, render.Leases(a, settings)); err != nil {
			return err
		}
		return foundFaults(a)
	}
	plan := leases.Plan(a, o.namespace)
	if !o.Confirm || plan.Keys() == 0 {
		if err := o.Print(s.Out, render.LeasesPlan(a, settings, plan, !o.Confirm)); err != nil {
			return err
		}
		return foundFaults(a)
	}
	if err := render.LeasesPlan(a, settings, plan, false).Human(table.NewSafeWriter(o.PlanWriter(s.Out, s.ErrOut)), false, false); err != nil {
		return err
	}
	if deadline, ok := ctx.Deadline(); ok {
		// What the audit found to delete must fit too: refused before
		// anything is written.
		if err := plan.Fits(pacing, oneKey, time.Until(deadline), g.Etcd.CommandTimeout); err != nil {
			return cli.Usage("%v", err)
		}
	}
	if err := o.Ask(s.In, s.ErrOut, fmt.Sprintf("Back up and delete %s?", render.Plural(plan.Keys(), "key"))); err != nil {
		return err
	}
	sctx, etcd, done, err := g.Bounded(ctx)
	if err != nil {
		return err
	}
	defer done()
	stop, doneWriting := etcdwrite.StopOnSignal(g.Notices)
	defer doneWriting()
	pacing.Stop = stop
	res, err := leases.Remove(sctx, plan, leases.RemoveOptions{Client: etcd, Prefix: g.Prefix, BackupRoot: o.BackupDir, Notices: g.Notices, Now: clock,
		Decrypt: decrypt.Namespaces(rs.Decrypter), Serves: opts.Serves, Pacing: pacing})
	if res == nil {
		return err
	}
	if err := o.PrintResult(s.Out, render.LeasesRemoved(res), err); err != nil {
		return err
	}
	if res.LeftSome(plan) {
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
