package cmd

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/regghost/regghost/internal/render"
	"github.com/regghost/regghost/pkg/dbfile"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/session"
	"github.com/regghost/regghost/pkg/space"
)

type spaceOptions struct {
	print *printFlags
	reads session.Reads
	top   int
	// quotaFlag is --quota-backend-bytes as given; quota its bytes.
	quotaFlag string
	quota     int64
}

// newSpaceCmd is `regghost space`: it reports where etcd's bytes are, and
// is the parent of the commands that free them.
func newSpaceCmd(g *globalOptions) *cobra.Command {
	o := &spaceOptions{reads: session.ScanReads(), print: newPrintFlags(false, "table", "wide")}
	c := &cobra.Command{
		Use:   "space",
		Short: "Show where etcd's bytes are, what fills it and what would free it (read-only)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := o.complete(); err != nil {
				return err
			}
			if err := o.validate(); err != nil {
				return err
			}
			return o.run(c.Context(), g, c.OutOrStdout())
		},
	}
	f := c.Flags()
	o.print.addFlags(c)
	f.IntVar(&o.top, "top", space.DefaultTop, "how many keys the largest and most-revisions lists keep")
	f.StringVar(&o.quotaFlag, "quota-backend-bytes", "", "etcd's --quota-backend-bytes (bytes, or a quantity such as 8Gi), for the members that do not say theirs")
	f.Int64Var(&o.reads.PageSize, "page-size", o.reads.PageSize, "keys per etcd range request when paging (etcd older than 3.7, or --stream=false)")
	f.IntVar(&o.reads.MaxKeysPerSecond, "max-keys-per-second", o.reads.MaxKeysPerSecond, "pace reads to leave etcd room for the API server (0: as fast as etcd serves)")
	f.BoolVar(&o.reads.Stream, "stream", o.reads.Stream, "read with etcd's RangeStream where the server has it (3.7+)")
	c.AddCommand(newSpaceReclaimCmd(g))
	return c
}

// complete reads --quota-backend-bytes.
func (o *spaceOptions) complete() error {
	if o.quotaFlag == "" {
		return nil
	}
	q, err := resource.ParseQuantity(o.quotaFlag)
	if err != nil || q.Value() <= 0 {
		return usageError("--quota-backend-bytes %q is not a positive size (bytes, or a quantity such as 8Gi)", o.quotaFlag)
	}
	o.quota = q.Value()
	return nil
}

func (o *spaceOptions) validate() error {
	if o.top < 0 {
		return usageError("--top must be 0 or more, got %d", o.top)
	}
	if err := validateScanInput(""); err != nil {
		return err
	}
	if err := validateScanSettings(o.reads, etcdscan.DefaultTerminatingAfter, etcdscan.DefaultAPICheckLimit); err != nil {
		return err
	}
	return o.print.validate()
}

func (o *spaceOptions) run(ctx context.Context, g *globalOptions, out io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, g.Etcd.CommandTimeout)
	defer cancel()
	top := o.top
	if top == 0 {
		top = -1
	}
	var r *space.Report
	var err error
	if g.DB != "" {
		r, err = o.fromFile(ctx, g, top)
	} else {
		r, err = o.fromEtcd(ctx, g, top)
	}
	if err != nil {
		return err
	}
	return o.print.print(out, render.Space(r))
}

// scanOver is the scan space runs over the store the account wraps: scan's
// own, with its defaults.
func (o *spaceOptions) scanOver(g *globalOptions, rs *session.Read) space.ScanFunc {
	return func(ctx context.Context, store etcdscan.Store) (*etcdscan.Report, error) {
		s := *rs
		s.Store = store
		return g.scan(ctx, &s, "", etcdscan.DefaultTerminatingAfter, etcdscan.DefaultAPICheckLimit, false)
	}
}

func (o *spaceOptions) fromFile(ctx context.Context, g *globalOptions, top int) (*space.Report, error) {
	rs, err := g.Open(ctx, o.reads)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	st, ok := rs.Store.(*dbfile.Store)
	if !ok {
		return nil, fmt.Errorf("--db %s did not open as a db file", g.DB)
	}
	return space.FromFile(ctx, st, o.scanOver(g, rs), space.Options{Prefix: g.Prefix, Top: top})
}

func (o *spaceOptions) fromEtcd(ctx context.Context, g *globalOptions, top int) (*space.Report, error) {
	cli, err := g.Connect(ctx)
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	store, err := etcdscan.NewEtcdStore(ctx, cli, o.reads.PageSize)
	if err != nil {
		return nil, err
	}
	if !o.reads.Stream {
		store.DisableStreaming()
	}
	store.SetMaxKeysPerSecond(o.reads.MaxKeysPerSecond)
	dec, err := g.Decrypter(ctx)
	if err != nil {
		return nil, err
	}
	view, why := g.API()
	rs := session.Wrap(g.Prefix, store, dec, view, why)
	return space.FromEtcd(ctx, cli, store, o.scanOver(g, rs), space.LiveOptions{Prefix: g.Prefix, Top: top, Members: g.memberOptions(o.quota)})
}

// memberOptions say how space and serve read etcd's members: each within
// the dial timeout, their /metrics (the quota of etcd before 3.6) with the
// etcd client's TLS files, and quota for those that say none.
func (g *globalOptions) memberOptions(quota int64) space.MemberOptions {
	// The TLS files may come from the node's configuration.
	g.Discover()
	var tlsConfig *tls.Config
	if cfg, err := g.Etcd.ClientConfig(); err == nil {
		tlsConfig = cfg.TLS
	}
	return space.MemberOptions{Timeout: g.Etcd.DialTimeout, Metrics: space.MetricsReader(tlsConfig), Quota: quota}
}
