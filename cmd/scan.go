package cmd

import (
	"context"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/regghost/regghost/internal/cli"
	"github.com/regghost/regghost/internal/render"
	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/notice"
	"github.com/regghost/regghost/pkg/session"
)

type scanOptions struct {
	noCompletion
	namespace string
	*render.PrintFlags
	reads            session.Reads
	terminatingAfter time.Duration
	apiCheckLimit    int
}

func newScanCmd(g *globalOptions) *cobra.Command {
	o := &scanOptions{reads: session.ScanReads(), PrintFlags: render.NewPrintFlags(true, "table", "wide")}
	c := &cobra.Command{
		Use:   "scan",
		Short: "List ghosts: objects in etcd that Kubernetes can no longer manage (read-only)",
		Args:  cobra.NoArgs,
		RunE:  runE(g, o),
	}
	f := c.Flags()
	f.StringVarP(&o.namespace, "namespace", "n", "", "scan only this namespace (and the namespace object itself)")
	o.AddFlags(c)
	cli.ReadsVar(f, &o.reads, cli.ScanPaceHelp)
	f.DurationVar(&o.terminatingAfter, "terminating-after", etcdscan.DefaultTerminatingAfter, "how long an object may be Terminating before it is reported stuck")
	f.IntVar(&o.apiCheckLimit, "api-check-limit", etcdscan.DefaultAPICheckLimit, "most single objects read back through the API server")
	return c
}

func (o *scanOptions) validate(*globalOptions) error {
	if err := validateScanInput(o.namespace); err != nil {
		return err
	}
	return cli.CheckScan(o.reads, o.terminatingAfter, o.apiCheckLimit)
}

// validateScanInput checks what every command that scans is given besides
// its flags: the namespace and the spill setting, before it connects.
func validateScanInput(ns string) error {
	if err := cli.CheckNamespace(ns); err != nil {
		return err
	}
	_, err := session.SpillAfter()
	return err
}

func (o *scanOptions) run(ctx context.Context, g *globalOptions, s genericiooptions.IOStreams) error {
	rep, err := g.Scan(ctx, o.reads, g.scanning(session.ScanOptions{Namespace: o.namespace, TerminatingAfter: o.terminatingAfter, APICheckLimit: o.apiCheckLimit,
		AuditLeases: true}, false))
	if err != nil {
		return err
	}
	defer rep.Close()
	if err := o.Print(s.Out, render.Report(rep, clock)); err != nil {
		return err
	}
	if rep.Ghosts() > 0 || rep.DanglingGoneCount() > 0 {
		return cli.Exit(ExitGhosts, nil)
	}
	return nil
}

// scanning is so with what every command that scans adds: regghost's
// clock, the progress line on stderr (unless quiet), and for a namespace
// of which etcd holds nothing, regghost's backups asked whether it
// existed (a backup under the default root or this command's is named
// after it).
func (g *globalOptions) scanning(so session.ScanOptions, quiet bool) session.ScanOptions {
	so.Now = clock
	if !quiet {
		so.Progress = func() (notice.Progress, func()) { return render.ScanProgress(g.errOut) }
	}
	so.Existed = backup.Existed(g.Notices, cli.BackupRoot(), g.backupRoot)
	return so
}
