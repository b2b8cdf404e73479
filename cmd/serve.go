package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/exporter-toolkit/web"
	"github.com/spf13/cobra"
	"google.golang.org/grpc"

	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/exporter"
)

// DefaultListenAddress is where serve listens unless told otherwise.
const DefaultListenAddress = ":9819"

type serveOptions struct {
	listen           string
	webConfig        string
	interval         time.Duration
	jitter           float64
	namespaceLimit   int
	reads            readSettings
	terminatingAfter time.Duration
	apiCheckLimit    int
}

func newServeCmd(g *globalOptions) *cobra.Command {
	o := &serveOptions{reads: scanReads()}
	c := &cobra.Command{
		Use:   "serve",
		Short: "Export ghosts, dangling references and terminating namespaces as Prometheus metrics, scanning every --interval (read-only)",
		Long: `serve scans the keyspace every --interval (jittered) and serves the counts on
/metrics for Prometheus, with /healthz and /readyz (ready once a scan has
succeeded). It only reads: nothing is written to etcd or the API server. One
etcd client and one API client are kept across cycles.

Each cycle replaces every per-finding series, so a purged ghost disappears. A
failed cycle keeps the last good values, counts the error in
regghost_scan_errors_total{reason} and says it in the log; serve never exits on
an etcd or API server error.

Labels carry no object names; namespaces beyond --namespace-label-limit (those
holding the fewest findings) share the namespace label "other". Namespace names
are not public: --web-config-file takes a Prometheus exporter-toolkit web
configuration (TLS, basic auth) for the endpoint.`,
		Example: `  regghost serve
  regghost serve --interval 5m --listen-address 127.0.0.1:9819 --web-config-file /etc/regghost/web.yml`,
		Args: cobra.NoArgs,
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
	f.StringVar(&o.listen, "listen-address", DefaultListenAddress, "address to serve /metrics, /healthz and /readyz on")
	f.StringVar(&o.webConfig, "web-config-file", "", "Prometheus exporter-toolkit web configuration: TLS and basic auth for the endpoint")
	f.DurationVar(&o.interval, "interval", 10*time.Minute, "wait between the end of one scan and the start of the next (a scan never overlaps the last)")
	f.Float64Var(&o.jitter, "jitter", 0.1, "largest fraction of --interval added or taken away at random, so nodes do not scan in step")
	f.IntVar(&o.namespaceLimit, "namespace-label-limit", exporter.DefaultNamespaceLimit, "namespaces with a label value of their own; the rest are counted as \"other\"")
	f.Int64Var(&o.reads.pageSize, "page-size", o.reads.pageSize, "keys per etcd range request when paging (etcd older than 3.7, or --stream=false)")
	f.IntVar(&o.reads.maxKeysPerSecond, "max-keys-per-second", o.reads.maxKeysPerSecond, "pace reads to leave etcd room for the API server (0: as fast as etcd serves)")
	f.BoolVar(&o.reads.stream, "stream", o.reads.stream, "read with etcd's RangeStream where the server has it (3.7+)")
	f.DurationVar(&o.terminatingAfter, "terminating-after", etcdscan.DefaultTerminatingAfter, "how long an object may be Terminating before it is reported stuck")
	f.IntVar(&o.apiCheckLimit, "api-check-limit", etcdscan.DefaultAPICheckLimit, "most single objects read back through the API server per scan")
	return c
}

func (o *serveOptions) validate(g *globalOptions) error {
	if g.db != "" {
		return usageError("serve watches a live etcd; --db is for one-off reads (regghost scan --db)")
	}
	if o.interval <= 0 {
		return usageError("--interval must be positive, got %s", o.interval)
	}
	if o.jitter < 0 || o.jitter >= 1 {
		return usageError("--jitter must be at least 0 and below 1, got %g", o.jitter)
	}
	if o.namespaceLimit < 0 {
		return usageError("--namespace-label-limit must be 0 or more, got %d", o.namespaceLimit)
	}
	if err := validateScanInput(""); err != nil {
		return err
	}
	if err := validateScanSettings(o.reads, o.terminatingAfter, o.apiCheckLimit); err != nil {
		return err
	}
	if o.webConfig != "" {
		if err := web.Validate(o.webConfig); err != nil {
			return usageError("--web-config-file %s: %s", o.webConfig, oneLine(err))
		}
	}
	return nil
}

func runServe(ctx context.Context, g *globalOptions, o *serveOptions, errOut io.Writer) error {
	log := slog.New(slog.NewTextHandler(errOut, nil))
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", o.listen, err)
	}
	meter := &exporter.EtcdMeter{}
	g.etcd.DialOptions = append(g.etcd.DialOptions, grpc.WithStatsHandler(meter))
	coll := exporter.NewCollector(meter)
	src := exporter.NewSource(exporter.SourceOptions{Connect: g.connect, LoadDecrypter: g.decrypter, OpenAPI: g.api,
		DialTimeout: g.etcd.DialTimeout, PageSize: o.reads.pageSize, Stream: o.reads.stream, MaxKeysPerSecond: o.reads.maxKeysPerSecond,
		Scan: coll.MeasureSpace(exporter.SpaceOptions{Prefix: g.prefix, NamespaceLimit: o.namespaceLimit, Members: g.memberOptions(0)}, func(ctx context.Context, in exporter.ScanInput) (*etcdscan.Report, error) {
			rs := &readSession{store: in.Store, dec: in.Decrypter, view: in.API, why: in.APIUnavailable, close: func() {}, quiet: true}
			rep, err := rs.scan(ctx, g, "", o.terminatingAfter, o.apiCheckLimit)
			var ae *apiError
			if errors.As(err, &ae) {
				return nil, &exporter.CycleError{Reason: exporter.ReasonAPI, Err: err}
			}
			return rep, err
		})})
	defer src.Close()
	loop := &exporter.Loop{Scan: src.Scan, Interval: o.interval, Jitter: o.jitter, Timeout: g.etcd.CommandTimeout,
		NamespaceLimit: o.namespaceLimit, Collector: coll, Meter: meter, Log: log}
	srv := &http.Server{Handler: exporter.Handler(exporter.Registry(coll), coll), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() {
		no := false
		served <- web.Serve(ln, srv, &web.FlagConfig{WebListenAddresses: &[]string{o.listen}, WebSystemdSocket: &no, WebConfigFile: &o.webConfig}, log)
	}()
	log.Info("serving metrics", "address", ln.Addr().String(), "interval", o.interval.String())
	looped := make(chan struct{})
	lctx, stopLoop := context.WithCancel(ctx)
	defer stopLoop()
	go func() { loop.Run(lctx); close(looped) }()
	select {
	case err = <-served:
		// The endpoint is gone: scanning on would serve nobody.
		stopLoop()
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = srv.Shutdown(sctx)
		cancel()
		err = <-served
	}
	<-looped
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve %s: %w", o.listen, err)
	}
	return nil
}
