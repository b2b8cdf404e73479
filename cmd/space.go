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
	"github.com/regghost/regghost/pkg/space"
)

type spaceOptions struct {
	print *printFlags
	reads readSettings
	top   int
	// quotaFlag is --quota-backend-bytes as given; quota its bytes.
	quotaFlag string
	quota     int64
}

// newSpaceCmd is `regghost space`: it reports where etcd's bytes are, and
// is the parent of the commands that free them.
func newSpaceCmd(g *globalOptions) *cobra.Command {
	o := &spaceOptions{reads: scanReads(), print: newPrintFlags(false, "table", "wide")}
	c := &cobra.Command{
		Use:   "space",
		Short: "Show where etcd's bytes are: by resource, namespace and ghost class, history, largest keys, members' sizes, quota and alarms (read-only)",
		Long: `space accounts for etcd's database, for an etcd out of space (NOSPACE:
"mvcc: database space exceeded") or before it is. It reads the keyspace once,
as scan does (the same ghost classes), and says:

  - per member: the db size, the size in use, the fragmented share (free pages
    a defragmentation gives back), the quota and its use, and the alarms;
  - the values held now and the history held since the last compaction, by
    resource, by namespace and by ghost class, ranked with their share;
  - the largest keys, and the keys with the most revisions held;
  - before anything is done, what a purge of the ghosts, a compaction at the
    current revision and a defragmentation would free.

Live, etcd says no revision count: each key's history is bounded from its
version and revisions against the compacted revision, and deletes are not
seen. With --db (a snapshot, or a member's member/snap/db while etcd is
stopped) every revision held is counted, and the file's pages in use are read.

The quota is each member's own (its Status from etcd 3.6, else its /metrics);
--quota-backend-bytes gives it for the members that do not say it.`,
		Example: `  regghost space
  regghost space -o wide
  regghost space -o json | jq '.namespaces[:5]'
  regghost space --db /var/lib/etcd/member/snap/db
  regghost snapshot save /tmp/now.db && regghost space --db /tmp/now.db`,
		Args: cobra.NoArgs,
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
	f.Int64Var(&o.reads.pageSize, "page-size", o.reads.pageSize, "keys per etcd range request when paging (etcd older than 3.7, or --stream=false)")
	f.IntVar(&o.reads.maxKeysPerSecond, "max-keys-per-second", o.reads.maxKeysPerSecond, "pace reads to leave etcd room for the API server (0: as fast as etcd serves)")
	f.BoolVar(&o.reads.stream, "stream", o.reads.stream, "read with etcd's RangeStream where the server has it (3.7+)")
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
	ctx, cancel := context.WithTimeout(ctx, g.etcd.CommandTimeout)
	defer cancel()
	top := o.top
	if top == 0 {
		top = -1
	}
	var r *space.Report
	var err error
	if g.db != "" {
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
func (o *spaceOptions) scanOver(g *globalOptions, rs *readSession) space.ScanFunc {
	return func(ctx context.Context, store etcdscan.Store) (*etcdscan.Report, error) {
		s := *rs
		s.store = store
		return s.scan(ctx, g, "", etcdscan.DefaultTerminatingAfter, etcdscan.DefaultAPICheckLimit)
	}
}

func (o *spaceOptions) fromFile(ctx context.Context, g *globalOptions, top int) (*space.Report, error) {
	rs, err := g.openRead(ctx, o.reads)
	if err != nil {
		return nil, err
	}
	defer rs.close()
	st, ok := rs.store.(*dbfile.Store)
	if !ok {
		return nil, fmt.Errorf("--db %s did not open as a db file", g.db)
	}
	return space.FromFile(ctx, st, o.scanOver(g, rs), space.Options{Prefix: g.prefix, Top: top})
}

func (o *spaceOptions) fromEtcd(ctx context.Context, g *globalOptions, top int) (*space.Report, error) {
	cli, err := g.connect(ctx)
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	store, err := etcdscan.NewEtcdStore(ctx, cli, o.reads.pageSize)
	if err != nil {
		return nil, err
	}
	if !o.reads.stream {
		store.DisableStreaming()
	}
	store.SetMaxKeysPerSecond(o.reads.maxKeysPerSecond)
	dec, err := g.decrypter(ctx)
	if err != nil {
		return nil, err
	}
	view, why := g.api()
	rs := &readSession{store: store, dec: dec, view: view, why: why, close: func() {}}
	return space.FromEtcd(ctx, cli, store, o.scanOver(g, rs), space.LiveOptions{Prefix: g.prefix, Top: top, Members: g.memberOptions(o.quota)})
}

// memberOptions say how space and serve read etcd's members: each within
// the dial timeout, their /metrics (the quota of etcd before 3.6) with the
// etcd client's TLS files, and quota for those that say none.
func (g *globalOptions) memberOptions(quota int64) space.MemberOptions {
	// The TLS files may come from the node's configuration.
	g.discover()
	var tlsConfig *tls.Config
	if cfg, err := g.etcd.ClientConfig(); err == nil {
		tlsConfig = cfg.TLS
	}
	return space.MemberOptions{Timeout: g.etcd.DialTimeout, Metrics: space.MetricsReader(tlsConfig), Quota: quota}
}
