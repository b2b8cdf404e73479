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
	"github.com/regghost/regghost/pkg/leases"
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
	_, err := spillSetting()
	return err
}

func (o *scanOptions) run(ctx context.Context, g *globalOptions, s genericiooptions.IOStreams) error {
	rep, err := scanReport(ctx, g, o.namespace, o.reads, o.terminatingAfter, o.apiCheckLimit, false, true)
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

// scanReport connects to etcd and the API server and runs one scan
// (keyIDs: as g.scan); auditLeases audits etcd's leases from the same pass.
func scanReport(ctx context.Context, g *globalOptions, namespace string, reads session.Reads, terminatingAfter time.Duration, apiCheckLimit int, keyIDs, auditLeases bool) (*etcdscan.Report, error) {
	rs, err := g.Open(ctx, reads)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	so, err := g.scanOptions(namespace, terminatingAfter, apiCheckLimit, false, keyIDs)
	if err != nil {
		return nil, err
	}
	if auditLeases && namespace == "" {
		// A scan of one namespace reads no pass over the whole registry:
		// `regghost leases -n NAMESPACE` audits its events.
		lo, _, done, err := g.LeasesOptions(ctx, rs, namespace, leases.Given{}, clock)
		if err != nil {
			return nil, err
		}
		defer done()
		so.Leases = &lo
	}
	return rs.Scan(ctx, so)
}

// spillAfter, when set (the golden tests run every command spilled), is
// how many findings a scan keeps in memory; else session.SpillAfter.
var spillAfter int

// spillSetting is spillAfter, else REGGHOST_SPILL_AFTER.
func spillSetting() (int, error) {
	if spillAfter > 0 {
		return spillAfter, nil
	}
	n, err := session.SpillAfter()
	if err != nil {
		return 0, cli.Usage("%v", err)
	}
	return n, nil
}

// scan runs one scan over rs with the progress line on stderr (unless
// quiet) and the spill setting; keyIDs asks the KMS v2 plugins that write
// their key ID (versions, serve).
func (g *globalOptions) scan(ctx context.Context, rs *session.Read, namespace string, terminatingAfter time.Duration, apiCheckLimit int, quiet, keyIDs bool) (*etcdscan.Report, error) {
	so, err := g.scanOptions(namespace, terminatingAfter, apiCheckLimit, quiet, keyIDs)
	if err != nil {
		return nil, err
	}
	return rs.Scan(ctx, so)
}

// scanOptions are the options of g.scan.
func (g *globalOptions) scanOptions(namespace string, terminatingAfter time.Duration, apiCheckLimit int, quiet, keyIDs bool) (session.ScanOptions, error) {
	spill, err := spillSetting()
	if err != nil {
		return session.ScanOptions{}, err
	}
	so := session.ScanOptions{Namespace: namespace, TerminatingAfter: terminatingAfter, APICheckLimit: apiCheckLimit, SpillAfter: spill, Now: clock, KMSKeyIDs: keyIDs}
	if !quiet {
		so.Progress = func() (notice.Progress, func()) { return render.ScanProgress(g.errOut) }
	}
	// A namespace found nowhere may have been written away by regghost:
	// a backup under the default root or this command's is named after it.
	so.Existed = backup.Existed(g.Notices, cli.BackupRoot(), g.backupRoot)
	return so, nil
}
