package exporter

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/pkg/apiview"
	"github.com/regghost/regghost/pkg/decrypt"
	"github.com/regghost/regghost/pkg/etcdscan"
)

// DefaultReconnectAfter is how many cycles in a row etcd must fail before a
// Source connects to it afresh.
const DefaultReconnectAfter = 3

// SourceOptions configure a Source.
type SourceOptions struct {
	// Connect opens etcd. The Source keeps the client across cycles and
	// closes it (Close, or to connect afresh).
	Connect func(ctx context.Context) (*clientv3.Client, error)
	// LoadDecrypter loads the encryption config: nil and no error when
	// there is none. It is loaded once, and again whenever etcd is
	// connected afresh.
	LoadDecrypter func(ctx context.Context) (*decrypt.Decrypter, error)
	// OpenAPI opens the API server: nil and the reason when it is not used
	// or cannot be reached, and the cycle goes on from etcd alone. It is
	// asked at every cycle and returns the same view while its kubeconfig
	// is unchanged, a new one once it changed (apiview.Loader.Open).
	OpenAPI func() (*apiview.View, string)
	// TLSFiles, when set, fingerprints the files Connect reads (etcd's CA,
	// client certificate and key). When the fingerprint differs from the
	// one taken before the client was opened, the next cycle connects
	// afresh and drops the old client once the new one answers: a rotated
	// client certificate is presented at once, on a new connection, rather
	// than after the old one fails.
	TLSFiles func() string
	// Log, when set, says when the Source connects afresh and why.
	Log *slog.Logger
	// DialTimeout bounds the reads that tell whether etcd answers: twice it
	// the first read of a cycle (pinning its revision), once it the read
	// after a failed scan.
	DialTimeout time.Duration
	// PageSize, Stream and MaxKeysPerSecond say how the keyspace is read
	// (etcdscan.EtcdStore: keys per range request when paging, RangeStream
	// where etcd has it, keys per second, 0 for no limit).
	PageSize         int64
	Stream           bool
	MaxKeysPerSecond int
	// ReconnectAfter is how many cycles in a row etcd must fail before the
	// Source connects to it afresh (DefaultReconnectAfter when 0).
	ReconnectAfter int
	// Scan runs one scan over what the cycle opened, and only reads. A
	// failure of the API server is returned as a *CycleError with
	// ReasonAPI; any other error that is no CycleError is counted under
	// ReasonEtcd when etcd does not answer a read right after, else as
	// ReasonOf says.
	Scan func(ctx context.Context, in ScanInput) (*etcdscan.Report, error)
}

// ScanInput is what a Source opened for one cycle's scan.
type ScanInput struct {
	// Store is etcd, pinned at a fresh revision.
	Store etcdscan.Store
	// Client is the etcd client the store reads with (members' status).
	Client *clientv3.Client
	// Decrypter opens values encrypted at rest; nil without a config.
	Decrypter *decrypt.Decrypter
	// API is the API server, answering now; nil when it is not, and
	// APIUnavailable says why.
	API            *apiview.View
	APIUnavailable string
}

// Source runs an exporter's scans (Loop.Scan) on one etcd client and one
// API client, opened at the first cycle that can and kept for the next.
// When etcd fails ReconnectAfter cycles in a row (certificates rotated,
// endpoints changed), the next cycle connects afresh, reading the files
// and the encryption config again. It is not safe for concurrent use: a
// Loop runs one cycle at a time.
type Source struct {
	o   SourceOptions
	cli *clientv3.Client
	dec *decrypt.Decrypter
	// decLoaded is set once the encryption config was read.
	decLoaded bool
	view      *apiview.View
	// tlsSum is TLSFiles' fingerprint taken before cli was opened.
	tlsSum string
	// etcdFailures counts the cycles in a row etcd failed.
	etcdFailures int
}

// NewSource returns a Source that connects at its first cycle.
func NewSource(o SourceOptions) *Source {
	if o.ReconnectAfter <= 0 {
		o.ReconnectAfter = DefaultReconnectAfter
	}
	return &Source{o: o}
}

// Close closes the etcd client, if one is open.
func (s *Source) Close() {
	if s.cli != nil {
		s.cli.Close()
		s.cli = nil
	}
}

// Scan is one cycle: a scan at a fresh revision on the shared clients.
func (s *Source) Scan(ctx context.Context) (*etcdscan.Report, error) {
	rep, err := s.scanOnce(ctx)
	var ce *CycleError
	switch {
	case err == nil:
		s.etcdFailures = 0
	case errors.As(err, &ce) && ce.Reason == ReasonEtcd:
		// etcd refused the client for cycles in a row: its certificates
		// may have been rotated, or its endpoints changed. The next cycle
		// connects afresh, reading the files (and the encryption config)
		// again.
		if s.etcdFailures++; s.etcdFailures >= s.o.ReconnectAfter && s.cli != nil {
			s.cli.Close()
			s.cli, s.decLoaded, s.etcdFailures = nil, false, 0
		}
	}
	return rep, err
}

// scanOnce is one scan at a fresh revision on the shared clients.
func (s *Source) scanOnce(ctx context.Context) (*etcdscan.Report, error) {
	s.rotate(ctx)
	if s.cli == nil {
		if s.o.TLSFiles != nil {
			// Taken before the files are read: a change while connecting
			// is seen at the next cycle.
			s.tlsSum = s.o.TLSFiles()
		}
		cli, err := s.o.Connect(ctx)
		if err != nil {
			return nil, &CycleError{Reason: ReasonEtcd, Err: err}
		}
		s.cli = cli
	}
	if !s.decLoaded {
		dec, err := s.o.LoadDecrypter(ctx)
		if err != nil {
			return nil, &CycleError{Reason: ReasonScan, Err: err}
		}
		s.dec, s.decLoaded = dec, true
	}
	view, why := s.api()
	// Pinning the revision is the cycle's first read: bounded by the dial
	// timeout, an etcd that went away fails the cycle at once rather than
	// at the cycle's timeout.
	pctx, cancel := context.WithTimeout(ctx, 2*s.o.DialTimeout)
	store, err := etcdscan.NewEtcdStore(pctx, s.cli, s.o.PageSize)
	cancel()
	if err != nil {
		return nil, &CycleError{Reason: ReasonEtcd, Err: err}
	}
	if !s.o.Stream {
		store.DisableStreaming()
	}
	store.SetMaxKeysPerSecond(s.o.MaxKeysPerSecond)
	rep, err := s.o.Scan(ctx, ScanInput{Store: store, Client: s.cli, Decrypter: s.dec, API: view, APIUnavailable: why})
	if err != nil {
		var ce *CycleError
		if errors.As(err, &ce) {
			return nil, err
		}
		return nil, s.etcdOrTimeout(ctx, err)
	}
	return rep, nil
}

// rotate connects afresh when etcd's TLS files changed since the client
// was opened. The old client is closed only once the new one answers: files
// caught half rewritten (a new certificate beside the old key) leave the
// cycle on the old connection, and the next cycle tries again.
func (s *Source) rotate(ctx context.Context) {
	if s.cli == nil || s.o.TLSFiles == nil {
		return
	}
	sum := s.o.TLSFiles()
	if sum == s.tlsSum {
		return
	}
	cli, err := s.o.Connect(ctx)
	if err != nil {
		s.logInfo("etcd's TLS files changed on disk but cannot be used yet; the open connection goes on", "err", firstLine(err))
		return
	}
	s.cli.Close()
	s.cli, s.tlsSum, s.decLoaded = cli, sum, false
	s.logInfo("etcd's TLS files changed on disk; connected afresh with them")
}

func (s *Source) logInfo(msg string, args ...any) {
	if s.o.Log != nil {
		s.o.Log.Info(msg, args...)
	}
}

// api returns the shared API client, opening it when it is not open yet
// or its kubeconfig changed; nil and the reason when the API server is not
// used or does not answer now (the scan then goes on from etcd alone and
// says so).
func (s *Source) api() (*apiview.View, string) {
	view, why := s.o.OpenAPI()
	if view == nil {
		return nil, why
	}
	if view != s.view {
		// Just opened, and checked to answer.
		s.view = view
		return view, ""
	}
	v, err := s.view.Version()
	if err != nil {
		return nil, "API server unreachable: " + firstLine(err)
	}
	s.view.ServerVersion = v
	return s.view, ""
}

// etcdOrTimeout names the reason of a failed cycle: etcd when etcd does not
// answer a read now, else timeout for a deadline, else scan.
func (s *Source) etcdOrTimeout(ctx context.Context, err error) error {
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.o.DialTimeout)
	defer cancel()
	if _, perr := s.cli.Get(pctx, "\x00", clientv3.WithCountOnly()); perr != nil {
		return &CycleError{Reason: ReasonEtcd, Err: err}
	}
	return err
}

// firstLine is an error's message up to its first line break.
func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}
