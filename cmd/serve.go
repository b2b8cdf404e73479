package cmd

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/regghost/regghost/internal/cli"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/exporter"
	"github.com/regghost/regghost/pkg/members"
	"github.com/regghost/regghost/pkg/metricsauth"
	"github.com/regghost/regghost/pkg/session"
)

// DefaultListenAddress is where serve listens unless told otherwise.
const DefaultListenAddress = ":9819"

type serveOptions struct {
	unbounded
	noCompletion
	// cfg is what serve runs with; its endpoint's flags bind straight
	// into cfg.Serving.
	cfg              exporter.Config
	terminatingAfter time.Duration
	apiCheckLimit    int
}

func newServeCmd(g *globalOptions) *cobra.Command {
	o := &serveOptions{cfg: exporter.Config{Reads: session.ScanReads()}}
	c := &cobra.Command{
		Use:   "serve",
		Short: "Export ghosts and stuck namespaces as Prometheus metrics (read-only)",
		Args:  cobra.NoArgs,
		RunE:  runE(g, o),
	}
	f := c.Flags()
	f.StringVar(&o.cfg.Serving.Listen, "listen-address", DefaultListenAddress, "address to serve /metrics, /healthz and /readyz on")
	f.StringVar(&o.cfg.BackupDir, "backup-dir", "", "export what regghost's backups under this directory hold and the room left on its filesystem (mount it read-only into the pod); none when empty")
	f.StringVar(&o.cfg.Serving.WebConfigFile, "web-config-file", "", "Prometheus exporter-toolkit web configuration: TLS and basic auth for the endpoint")
	f.StringVar(&o.cfg.Serving.Auth, "metrics-auth", metricsauth.AuthNone, `who may read /metrics: "delegated" (a bearer token the API server reviews, whose user may get the non-resource URL /metrics; over TLS only) or "none"`)
	f.StringVar(&o.cfg.Serving.CertDir, "cert-dir", "", "serve over TLS with a self-signed certificate kept in this directory ("+metricsauth.CertFile+", "+metricsauth.KeyFile+"): made when missing, made anew before it expires, served without a restart; --web-config-file's other settings still apply (for a certificate of your own, give the file a tls_server_config instead)")
	f.BoolVar(&o.cfg.Serving.InsecureHTTP, "insecure-http", false, "let credentials (--metrics-auth=delegated's bearer tokens, basic_auth_users' passwords) travel over plain HTTP, on a loopback --listen-address only (127.0.0.0/8, ::1, localhost)")
	f.DurationVar(&o.cfg.Interval, "interval", 10*time.Minute, "wait between the end of one scan and the start of the next (a scan never overlaps the last)")
	f.DurationVar(&o.cfg.MembersInterval, "members-interval", 15*time.Minute, "wait between two comparisons of etcd's members (regghost members: their hashes, and their keys when the hashes differ); 0: never")
	f.StringVar(&o.cfg.MembersHash, "members-hash", members.HashCompaction, "which HashKV the members' comparison asks for: "+strings.Join(members.HashModes, ", ")+
		" (compaction: kept by etcd from its newest compaction, read at no cost; full: a scan of each member's keyspace, during which it commits no write)")
	f.Float64Var(&o.cfg.Jitter, "jitter", 0.1, "largest fraction of --interval added or taken away at random, so nodes do not scan in step")
	f.IntVar(&o.cfg.NamespaceLimit, "namespace-label-limit", exporter.DefaultNamespaceLimit, "namespaces with a label value of their own; the rest are counted as \"other\"")
	cli.ReadsVar(f, &o.cfg.Reads, cli.ScanPaceHelp)
	f.DurationVar(&o.terminatingAfter, "terminating-after", etcdscan.DefaultTerminatingAfter, "how long an object may be Terminating before it is reported stuck")
	f.IntVar(&o.apiCheckLimit, "api-check-limit", etcdscan.DefaultAPICheckLimit, "most single objects read back through the API server per scan")
	return c
}

func (o *serveOptions) validate(g *globalOptions) error {
	if g.DB != "" {
		return cli.Usage("serve watches a live etcd; --db is for one-off reads (regghost scan --db)")
	}
	if err := o.cfg.Check(); err != nil {
		return cli.Usage("%v", err)
	}
	if err := validateScanInput(""); err != nil {
		return err
	}
	if err := cli.CheckScan(o.cfg.Reads, o.terminatingAfter, o.apiCheckLimit); err != nil {
		return err
	}
	o.cfg.Serving.NoAPI = g.NoAPI
	if err := o.cfg.Serving.Check(); err != nil {
		return cli.Usage("%v", err)
	}
	return nil
}

// run serves until ctx is done or a signal comes, its log on stderr, each
// scan as scan's (quiet: no progress line).
func (o *serveOptions) run(ctx context.Context, g *globalOptions, s genericiooptions.IOStreams) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	o.cfg.Log, o.cfg.Now = slog.New(slog.NewTextHandler(s.ErrOut, nil)), clock
	o.cfg.Scan = func(ctx context.Context, rs *session.Read) (*etcdscan.Report, error) {
		return rs.Scan(ctx, g.scanning(session.ScanOptions{TerminatingAfter: o.terminatingAfter, APICheckLimit: o.apiCheckLimit, KMSKeyIDs: true}, true))
	}
	return exporter.Run(ctx, &g.Settings, o.cfg)
}
