package cmd

import (
	"context"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/regghost/regghost/internal/cli"
	"github.com/regghost/regghost/internal/render"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/leases"
	"github.com/regghost/regghost/pkg/session"
	"github.com/regghost/regghost/pkg/space"
)

type spaceOptions struct {
	*render.PrintFlags
	reads session.Reads
	top   int
	// quota is --quota-backend-bytes (0: not given).
	quota int64
	// backupDir is where regghost's backups are, counted beside etcd.
	backupDir string
}

// newSpaceCmd is `regghost space`: it reports where etcd's bytes are, and
// is the parent of the commands that free them.
func newSpaceCmd(g *globalOptions) *cobra.Command {
	o := &spaceOptions{reads: session.ScanReads(), PrintFlags: render.NewPrintFlags(false, "table", "wide")}
	c := &cobra.Command{
		Use:   "space",
		Short: "Show where etcd's bytes are, what fills it and what would free it (read-only)",
		Args:  cobra.NoArgs,
		RunE:  runE(g, o),
	}
	f := c.Flags()
	cli.BackupDirVar(f, &o.backupDir, "where regghost's backups are: what they hold on that filesystem is shown")
	o.AddFlags(c)
	f.IntVar(&o.top, "top", space.DefaultTop, "how many keys the largest and most-revisions lists keep")
	f.Var(cli.Quantity{V: &o.quota}, "quota-backend-bytes", "etcd's --quota-backend-bytes (bytes, or a quantity such as 8Gi), for the members that do not say theirs")
	cli.ReadsVar(f, &o.reads, cli.ScanPaceHelp)
	c.AddCommand(newSpaceReclaimCmd(g))
	return c
}

// complete checks --quota-backend-bytes, when given.
func (o *spaceOptions) complete(_ *globalOptions, c *cobra.Command, _ []string) error {
	if c.Flags().Changed("quota-backend-bytes") && o.quota <= 0 {
		return cli.Usage("--quota-backend-bytes must be a positive size, got %d", o.quota)
	}
	return nil
}

func (o *spaceOptions) validate(*globalOptions) error {
	if o.top < 0 {
		return cli.Usage("--top must be 0 or more, got %d", o.top)
	}
	if err := validateScanInput(""); err != nil {
		return err
	}
	if err := cli.CheckScan(o.reads, etcdscan.DefaultTerminatingAfter, etcdscan.DefaultAPICheckLimit); err != nil {
		return err
	}
	return nil
}

func (o *spaceOptions) run(ctx context.Context, g *globalOptions, s genericiooptions.IOStreams) error {
	top := o.top
	if top == 0 {
		top = -1
	}
	// What outlives its lease is attributed from the same pass, judged by
	// this node's kube-apiserver settings (discovered first).
	g.Discover()
	audit, _ := leases.Judged(leases.Options{Registry: g.Prefix, Now: clock}, leases.Given{}, g.Node)
	r, err := space.Measure(ctx, &g.Settings, space.MeasureOptions{Reads: o.reads, Top: top, Quota: o.quota, BackupRoot: o.backupDir, Leases: &audit,
		Scan: func(ctx context.Context, rs *session.Read) (*etcdscan.Report, error) {
			return rs.Scan(ctx, g.scanning(session.ScanOptions{}, false))
		}})
	if err != nil {
		return err
	}
	return o.Print(s.Out, render.Space(r))
}
