package exporter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"

	"github.com/regghost/regghost/pkg/apiview"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/leases"
	"github.com/regghost/regghost/pkg/members"
	"github.com/regghost/regghost/pkg/metricsauth"
	"github.com/regghost/regghost/pkg/session"
	"github.com/regghost/regghost/pkg/space"
)

// Config is what `regghost serve` runs with besides the cluster's
// settings: its endpoint, its cycles and what each reads.
type Config struct {
	// Serving is how the endpoint is reached (checked by its Check).
	Serving metricsauth.Serving
	// BackupDir, when given, is the backup directory whose holdings are
	// exported (regghost_backup_bytes and its filesystem's room).
	BackupDir string
	// Interval and Jitter space the scans.
	Interval time.Duration
	Jitter   float64
	// MembersInterval is the wait between two comparisons of etcd's
	// members (0: none), MembersHash the HashKV they ask for.
	MembersInterval time.Duration
	MembersHash     string
	// NamespaceLimit is how many namespaces have a label value of their own.
	NamespaceLimit int
	// Reads are how each scan reads the keyspace.
	Reads session.Reads
	// Scan runs one scan over rs, quietly (the caller's scan options).
	Scan func(ctx context.Context, rs *session.Read) (*etcdscan.Report, error)
	// Now is the leases audit's clock.
	Now func() time.Time
	// Log receives the endpoint's and the cycles' log lines.
	Log *slog.Logger
}

// Run serves s's cluster as cfg says until ctx is done: one identity (the
// kubeconfig's, read again when its files change) for the API witness and
// the delegated reviews, the endpoint over the TLS cfg gives (a
// self-signed certificate kept in --cert-dir, renewed as it runs), a scan
// every Interval that measures space and audits leases from the same pass,
// and the members compared every MembersInterval.
func Run(ctx context.Context, s *session.Settings, cfg Config) error {
	log := cfg.Log
	kube := apiview.NewLoader(apiview.Options{Kubeconfig: s.Kubeconfig, Context: s.Context, Timeout: s.Etcd.DialTimeout * 2})
	kube.OnChange = func(files []string) {
		log.Info("the kubeconfig changed on disk; API clients rebuilt", "files", strings.Join(files, ","))
	}
	var guard Guard
	if cfg.Serving.Auth == metricsauth.AuthDelegated {
		d, err := metricsauth.New(kube, log)
		if err != nil {
			return fmt.Errorf("--metrics-auth=delegated: %w", err)
		}
		guard = d.Wrap
	}
	webConfig, tlsMode := cfg.Serving.WebConfigFile, "off"
	if cfg.Serving.Web.TLS {
		tlsMode = "web-config-file"
	}
	if cfg.Serving.CertDir != "" {
		cert := metricsauth.NewServingCert(metricsauth.ServingCertOptions{Dir: cfg.Serving.CertDir, Listen: cfg.Serving.Listen, WebConfig: cfg.Serving.WebConfigFile, Log: log})
		if _, err := cert.Ensure(); err != nil {
			return fmt.Errorf("--cert-dir %s: %w", cfg.Serving.CertDir, err)
		}
		certCtx, stopCert := context.WithCancel(ctx)
		defer stopCert()
		go cert.Run(certCtx)
		webConfig, tlsMode = cert.WebConfig(), "cert-dir"
	}
	openAPI := kube.Open
	if s.NoAPI {
		openAPI = s.API
	}
	meter := &EtcdMeter{}
	s.Etcd.DialOptions = append(s.Etcd.DialOptions, grpc.WithStatsHandler(meter))
	coll := NewCollector(meter)
	judged := func(ctx context.Context, in ScanInput) leases.Options {
		opts, _ := leases.Judged(leases.Options{Registry: s.Prefix}, leases.Given{}, s.Node)
		return opts.From(ctx, leases.Source{Client: in.Client, API: in.API, Decrypter: in.Decrypter, Clock: cfg.Now})
	}
	scan := func(ctx context.Context, in ScanInput) (*etcdscan.Report, error) {
		rep, err := cfg.Scan(ctx, session.Wrap(s.Prefix, in.Store, in.Decrypter, in.API, in.APIUnavailable))
		var ae *session.APIError
		if errors.As(err, &ae) {
			return nil, &CycleError{Reason: ReasonAPI, Err: err}
		}
		return rep, err
	}
	src := NewSource(SourceOptions{Connect: s.Connect, LoadDecrypter: s.Decrypter, OpenAPI: openAPI, Log: log,
		TLSFiles:    func() string { s.Discover(); return s.Etcd.TLSFingerprint() },
		DialTimeout: s.Etcd.DialTimeout, PageSize: cfg.Reads.PageSize, Stream: cfg.Reads.Stream, MaxKeysPerSecond: cfg.Reads.MaxKeysPerSecond,
		Scan: coll.MeasureSpace(SpaceOptions{Prefix: s.Prefix, NamespaceLimit: cfg.NamespaceLimit, Members: space.MembersOf(s, 0)},
			coll.AuditLeases(cfg.NamespaceLimit, judged, scan))})
	defer src.Close()
	loop := &Loop{Scan: src.Scan, Interval: cfg.Interval, Jitter: cfg.Jitter, Timeout: s.Etcd.CommandTimeout,
		NamespaceLimit: cfg.NamespaceLimit, Collector: coll, Meter: meter, Log: log}
	var extra []prometheus.Collector
	if cfg.BackupDir != "" {
		extra = append(extra, BackupCollector{Root: cfg.BackupDir})
	}
	var watches []interface{ Run(context.Context) }
	if cfg.MembersInterval > 0 {
		w := &MembersWatch{Interval: cfg.MembersInterval, Log: log, Compare: func(ctx context.Context) (*members.Report, error) {
			return compareMembers(ctx, s, cfg)
		}}
		extra, watches = append(extra, w), append(watches, w)
	}
	return Serve(ctx, ServeOptions{Listen: cfg.Serving.Listen, WebConfig: webConfig, Guard: guard, Loop: loop, Collector: coll, Log: log,
		Fields: []any{"metrics_auth", cfg.Serving.Auth, "tls", tlsMode}, Extra: extra, Watches: watches})
}

// compareMembers is one comparison of etcd's members, cheap while they
// agree: the hashes etcd kept from its compactions, one member at a time;
// the keys only when they differ (MembersHash full: a scan of each
// member). The members are read at once, each at members' pace, or at
// the scans' --max-keys-per-second when that is slower.
func compareMembers(ctx context.Context, s *session.Settings, cfg Config) (*members.Report, error) {
	ctx, cancel := context.WithTimeout(ctx, s.Etcd.CommandTimeout)
	defer cancel()
	reads := members.Reads()
	reads.PageSize, reads.Stream = cfg.Reads.PageSize, cfg.Reads.Stream
	if p := cfg.Reads.MaxKeysPerSecond; p > 0 && p < reads.MaxKeysPerSecond {
		reads.MaxKeysPerSecond = p
	}
	opts, done, err := members.Setup(ctx, s, members.Options{Reads: reads, MaxKeys: 100, Hash: cfg.MembersHash, Keys: members.KeysOnMismatch})
	if err != nil {
		return nil, err
	}
	defer done()
	return members.Compare(ctx, opts)
}

// Check refuses a Config serve cannot run with, naming the flag.
func (c *Config) Check() error {
	if !slices.Contains(members.HashModes, c.MembersHash) {
		return fmt.Errorf("--members-hash %q: want one of %s", c.MembersHash, strings.Join(members.HashModes, ", "))
	}
	if c.MembersInterval < 0 {
		return fmt.Errorf("--members-interval must be 0 (never) or positive, got %s", c.MembersInterval)
	}
	if c.Interval <= 0 {
		return fmt.Errorf("--interval must be positive, got %s", c.Interval)
	}
	if c.Jitter < 0 || c.Jitter >= 1 {
		return fmt.Errorf("--jitter must be at least 0 and below 1, got %g", c.Jitter)
	}
	if c.NamespaceLimit < 0 {
		return fmt.Errorf("--namespace-label-limit must be 0 or more, got %d", c.NamespaceLimit)
	}
	return nil
}
