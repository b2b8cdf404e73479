package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"

	"github.com/regghost/regghost/internal/cli"
	"github.com/regghost/regghost/pkg/apiview"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/exporter"
	"github.com/regghost/regghost/pkg/leases"
	"github.com/regghost/regghost/pkg/members"
	"github.com/regghost/regghost/pkg/metricsauth"
	"github.com/regghost/regghost/pkg/session"
	"github.com/regghost/regghost/pkg/space"
)

// DefaultListenAddress is where serve listens unless told otherwise.
const DefaultListenAddress = ":9819"

type serveOptions struct {
	// backupDir, when given, is the backup directory whose holdings are
	// exported (regghost_backup_bytes and its filesystem's room).
	backupDir string
	interval  time.Duration
	jitter    float64
	// membersInterval is the wait between two comparisons of etcd's
	// members (0: none).
	membersInterval time.Duration
	// membersHash is the HashKV the comparison asks for.
	membersHash      string
	namespaceLimit   int
	reads            session.Reads
	terminatingAfter time.Duration
	apiCheckLimit    int
	// serving is how the endpoint is reached (its flags), checked by
	// validate.
	serving metricsauth.Serving
}

func newServeCmd(g *globalOptions) *cobra.Command {
	o := &serveOptions{reads: session.ScanReads()}
	c := &cobra.Command{
		Use:   "serve",
		Short: "Export ghosts and stuck namespaces as Prometheus metrics (read-only)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := o.validate(g); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(c.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runServe(ctx, g, o, c.ErrOrStderr())
		},
	}
	f := c.Flags()
	f.StringVar(&o.serving.Listen, "listen-address", DefaultListenAddress, "address to serve /metrics, /healthz and /readyz on")
	f.StringVar(&o.backupDir, "backup-dir", "", "export what regghost's backups under this directory hold and the room left on its filesystem (mount it read-only into the pod); none when empty")
	f.StringVar(&o.serving.WebConfigFile, "web-config-file", "", "Prometheus exporter-toolkit web configuration: TLS and basic auth for the endpoint")
	f.StringVar(&o.serving.Auth, "metrics-auth", metricsauth.AuthNone, `who may read /metrics: "delegated" (a bearer token the API server reviews, whose user may get the non-resource URL /metrics; over TLS only) or "none"`)
	f.StringVar(&o.serving.CertDir, "cert-dir", "", "serve over TLS with a self-signed certificate kept in this directory ("+metricsauth.CertFile+", "+metricsauth.KeyFile+"): made when missing, made anew before it expires, served without a restart; --web-config-file's other settings still apply (for a certificate of your own, give the file a tls_server_config instead)")
	f.BoolVar(&o.serving.InsecureHTTP, "insecure-http", false, "let credentials (--metrics-auth=delegated's bearer tokens, basic_auth_users' passwords) travel over plain HTTP, on a loopback --listen-address only (127.0.0.0/8, ::1, localhost)")
	f.DurationVar(&o.interval, "interval", 10*time.Minute, "wait between the end of one scan and the start of the next (a scan never overlaps the last)")
	f.DurationVar(&o.membersInterval, "members-interval", 15*time.Minute, "wait between two comparisons of etcd's members (regghost members: their hashes, and their keys when the hashes differ); 0: never")
	f.StringVar(&o.membersHash, "members-hash", members.HashCompaction, "which HashKV the members' comparison asks for: "+strings.Join(members.HashModes, ", ")+
		" (compaction: kept by etcd from its newest compaction, read at no cost; full: a scan of each member's keyspace, during which it commits no write)")
	f.Float64Var(&o.jitter, "jitter", 0.1, "largest fraction of --interval added or taken away at random, so nodes do not scan in step")
	f.IntVar(&o.namespaceLimit, "namespace-label-limit", exporter.DefaultNamespaceLimit, "namespaces with a label value of their own; the rest are counted as \"other\"")
	cli.ReadsVar(f, &o.reads, cli.ScanPaceHelp)
	f.DurationVar(&o.terminatingAfter, "terminating-after", etcdscan.DefaultTerminatingAfter, "how long an object may be Terminating before it is reported stuck")
	f.IntVar(&o.apiCheckLimit, "api-check-limit", etcdscan.DefaultAPICheckLimit, "most single objects read back through the API server per scan")
	return c
}

func (o *serveOptions) validate(g *globalOptions) error {
	if g.DB != "" {
		return cli.Usage("serve watches a live etcd; --db is for one-off reads (regghost scan --db)")
	}
	if !slices.Contains(members.HashModes, o.membersHash) {
		return cli.Usage("--members-hash %q: want one of %s", o.membersHash, strings.Join(members.HashModes, ", "))
	}
	if o.membersInterval < 0 {
		return cli.Usage("--members-interval must be 0 (never) or positive, got %s", o.membersInterval)
	}
	if o.interval <= 0 {
		return cli.Usage("--interval must be positive, got %s", o.interval)
	}
	if o.jitter < 0 || o.jitter >= 1 {
		return cli.Usage("--jitter must be at least 0 and below 1, got %g", o.jitter)
	}
	if o.namespaceLimit < 0 {
		return cli.Usage("--namespace-label-limit must be 0 or more, got %d", o.namespaceLimit)
	}
	if err := validateScanInput(""); err != nil {
		return err
	}
	if err := validateScanSettings(o.reads, o.terminatingAfter, o.apiCheckLimit); err != nil {
		return err
	}
	o.serving.NoAPI = g.NoAPI
	if err := o.serving.Check(); err != nil {
		return cli.Usage("%v", err)
	}
	return nil
}

func runServe(ctx context.Context, g *globalOptions, o *serveOptions, errOut io.Writer) error {
	log := slog.New(slog.NewTextHandler(errOut, nil))
	// One loader for the witness and the reviews: one identity, its files
	// read again when they change.
	kube := apiview.NewLoader(apiview.Options{Kubeconfig: g.Kubeconfig, Context: g.Context, Timeout: g.Etcd.DialTimeout * 2})
	kube.OnChange = func(files []string) {
		log.Info("the kubeconfig changed on disk; API clients rebuilt", "files", strings.Join(files, ","))
	}
	var guard exporter.Guard
	if o.serving.Auth == metricsauth.AuthDelegated {
		d, err := metricsauth.New(kube, log)
		if err != nil {
			return fmt.Errorf("--metrics-auth=delegated: %w", err)
		}
		guard = d.Wrap
	}
	webConfig, tlsMode := o.serving.WebConfigFile, "off"
	if o.serving.Web.TLS {
		tlsMode = "web-config-file"
	}
	if o.serving.CertDir != "" {
		cert := metricsauth.NewServingCert(metricsauth.ServingCertOptions{Dir: o.serving.CertDir, Listen: o.serving.Listen, WebConfig: o.serving.WebConfigFile, Log: log})
		if _, err := cert.Ensure(); err != nil {
			return fmt.Errorf("--cert-dir %s: %w", o.serving.CertDir, err)
		}
		certCtx, stopCert := context.WithCancel(ctx)
		defer stopCert()
		go cert.Run(certCtx)
		webConfig, tlsMode = cert.WebConfig(), "cert-dir"
	}
	openAPI := kube.Open
	if g.NoAPI {
		openAPI = g.API
	}
	meter := &exporter.EtcdMeter{}
	g.Etcd.DialOptions = append(g.Etcd.DialOptions, grpc.WithStatsHandler(meter))
	coll := exporter.NewCollector(meter)
	src := exporter.NewSource(exporter.SourceOptions{Connect: g.Connect, LoadDecrypter: g.Decrypter, OpenAPI: openAPI, Log: log,
		TLSFiles:    func() string { g.Discover(); return g.Etcd.TLSFingerprint() },
		DialTimeout: g.Etcd.DialTimeout, PageSize: o.reads.PageSize, Stream: o.reads.Stream, MaxKeysPerSecond: o.reads.MaxKeysPerSecond,
		Scan: coll.MeasureSpace(exporter.SpaceOptions{Prefix: g.Prefix, NamespaceLimit: o.namespaceLimit, Members: space.MembersOf(&g.Settings, 0)}, coll.AuditLeases(o.namespaceLimit, func(ctx context.Context, in exporter.ScanInput) leases.Options {
			opts, _ := leases.Judged(leases.Options{Registry: g.Prefix}, leases.Given{}, g.Node)
			return opts.From(ctx, leases.Source{Client: in.Client, API: in.API, Decrypter: in.Decrypter, Clock: clock})
		}, func(ctx context.Context, in exporter.ScanInput) (*etcdscan.Report, error) {
			rs := session.Wrap(g.Prefix, in.Store, in.Decrypter, in.API, in.APIUnavailable)
			rep, err := g.scan(ctx, rs, "", o.terminatingAfter, o.apiCheckLimit, true, true)
			var ae *session.APIError
			if errors.As(err, &ae) {
				return nil, &exporter.CycleError{Reason: exporter.ReasonAPI, Err: err}
			}
			return rep, err
		}))})
	defer src.Close()
	loop := &exporter.Loop{Scan: src.Scan, Interval: o.interval, Jitter: o.jitter, Timeout: g.Etcd.CommandTimeout,
		NamespaceLimit: o.namespaceLimit, Collector: coll, Meter: meter, Log: log}
	var extra []prometheus.Collector
	if o.backupDir != "" {
		extra = append(extra, exporter.BackupCollector{Root: o.backupDir})
	}
	var watches []interface{ Run(context.Context) }
	if o.membersInterval > 0 {
		w := &exporter.MembersWatch{Interval: o.membersInterval, Log: log, Compare: func(ctx context.Context) (*members.Report, error) {
			ctx, cancel := context.WithTimeout(ctx, g.Etcd.CommandTimeout)
			defer cancel()
			// Cheap while the members agree: the hashes etcd kept from its
			// compactions, one member at a time; the keys only when they
			// differ (--members-hash full: a scan of each member).
			// The members are read at once, each at members' pace, or at
			// --max-keys-per-second when that is slower.
			reads := members.Reads()
			reads.PageSize, reads.Stream = o.reads.PageSize, o.reads.Stream
			if p := o.reads.MaxKeysPerSecond; p > 0 && p < reads.MaxKeysPerSecond {
				reads.MaxKeysPerSecond = p
			}
			opts, done, err := members.Setup(ctx, &g.Settings, members.Options{Reads: reads, MaxKeys: 100, Hash: o.membersHash, Keys: members.KeysOnMismatch})
			if err != nil {
				return nil, err
			}
			defer done()
			return members.Compare(ctx, opts)
		}}
		extra, watches = append(extra, w), append(watches, w)
	}
	return exporter.Serve(ctx, exporter.ServeOptions{Listen: o.serving.Listen, WebConfig: webConfig, Guard: guard, Loop: loop, Collector: coll, Log: log,
		Fields: []any{"metrics_auth", o.serving.Auth, "tls", tlsMode}, Extra: extra, Watches: watches})
}
