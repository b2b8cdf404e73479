package session

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/time/rate"
	"k8s.io/client-go/dynamic"

	"github.com/regghost/regghost/pkg/apiview"
	"github.com/regghost/regghost/pkg/dbfile"
	"github.com/regghost/regghost/pkg/decrypt"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/pace"
)

// Reads say how a command reads a live etcd.
type Reads struct {
	// PageSize is keys per Range request when paging.
	PageSize int64
	// Stream uses RangeStream where the server has it.
	Stream bool
	// MaxKeysPerSecond paces reads (0: unpaced).
	MaxKeysPerSecond int
	// Adaptive paces a live read by etcd's own latency instead (pkg/pace,
	// as members does: a probe read's latency against its idle median),
	// between MinKeysPerSecond and MaxKeysPerSecond: the pace that keeps
	// other clients' writes where they are idle, whatever the machine,
	// and never so slow that a million keys take more than a minute or so.
	Adaptive         bool
	MinKeysPerSecond int
}

// ScanReads are the reads of a scan unless its flags say otherwise.
func ScanReads() Reads {
	return Reads{PageSize: etcdscan.DefaultPageSize, Stream: true, MaxKeysPerSecond: etcdscan.DefaultMaxKeysPerSecond}
}

// Read is what reading the cluster needs, opened once: the keyspace
// (pinned at one revision), the decrypter and the API server.
type Read struct {
	Store     etcdscan.Store
	Decrypter *decrypt.Decrypter
	// API is nil when the API server is not used; Why then says why.
	API *apiview.View
	Why string
	// DB says the keyspace is a db file read offline.
	DB bool
	// Close releases the keyspace.
	Close  func()
	prefix string
}

// OpenDB opens a db file (an etcd or k3s snapshot, plain or zipped, or a
// member's db) and says which revision it holds and when it was taken:
// every command reading a db file goes through it.
func (s *Settings) OpenDB(path string) (*dbfile.Store, error) {
	st, info, err := dbfile.OpenSnapshot(path)
	if err != nil {
		return nil, err
	}
	s.Notices.Info(info.String())
	return st, nil
}

// OpenStore opens the keyspace: the db file, or etcd pinned at its current
// revision. close releases it.
func (s *Settings) OpenStore(ctx context.Context, reads Reads) (store etcdscan.Store, close func(), err error) {
	if s.DB != "" {
		st, err := s.OpenDB(s.DB)
		if err != nil {
			return nil, nil, err
		}
		return st, func() { st.Close() }, nil
	}
	cli, err := s.Connect(ctx)
	if err != nil {
		return nil, nil, err
	}
	es, err := etcdscan.NewEtcdStore(ctx, cli, reads.PageSize)
	if err != nil {
		cli.Close()
		return nil, nil, err
	}
	if !reads.Stream {
		es.DisableStreaming()
	}
	es.SetMaxKeysPerSecond(reads.MaxKeysPerSecond)
	if reads.Adaptive && reads.MaxKeysPerSecond > 0 {
		// The probe counts one key inside the prefix: an etcd user allowed
		// only the registry may ask it.
		probeKey := s.Prefix
		if probeKey == "" {
			probeKey = "/registry/"
		}
		lowest := min(max(reads.MinKeysPerSecond, 1), reads.MaxKeysPerSecond)
		p, err := pace.New(func(ctx context.Context) error {
			_, err := cli.Get(ctx, probeKey, clientv3.WithCountOnly(), clientv3.WithSerializable())
			return err
		}, pace.Config{Max: float64(reads.MaxKeysPerSecond), Min: float64(lowest)})
		if err != nil {
			cli.Close()
			return nil, nil, err
		}
		es.SetPacer(&orLowest{p: p, lowest: rate.NewLimiter(rate.Limit(lowest), max(lowest/10, 1))})
		// The pacer probes for as long as the store is open.
		pctx, stop := context.WithCancel(context.Background())
		go func() { _ = p.Run(pctx) }()
		return es, func() { stop(); cli.Close() }, nil
	}
	return es, func() { cli.Close() }, nil
}

// Open opens the keyspace, the encryption config and the API server.
func (s *Settings) Open(ctx context.Context, reads Reads) (*Read, error) {
	store, closeStore, err := s.OpenStore(ctx, reads)
	if err != nil {
		return nil, err
	}
	dec, err := s.Decrypter(ctx)
	if err != nil {
		closeStore()
		return nil, err
	}
	view, why := s.API()
	return &Read{Store: store, Decrypter: dec, API: view, Why: why, DB: s.DB != "", Close: closeStore, prefix: s.Prefix}, nil
}

// Wrap is a Read over what the caller opened (serve's reconnecting
// source); Close does nothing.
func Wrap(prefix string, store etcdscan.Store, dec *decrypt.Decrypter, view *apiview.View, why string) *Read {
	return &Read{Store: store, Decrypter: dec, API: view, Why: why, Close: func() {}, prefix: prefix}
}

// Registry is the prefix kube-apiserver stores under.
func (r *Read) Registry() string { return r.prefix }

// orLowest is a pacer that reads at its lowest pace when it could not
// measure etcd's idle latency (no probe answered): the read goes on, at
// the pace that costs etcd least, instead of failing.
type orLowest struct {
	p      *pace.Pacer
	lowest *rate.Limiter
}

// Wait implements etcdscan.Pacer.
func (o *orLowest) Wait(ctx context.Context, n int) error {
	err := o.p.Wait(ctx, n)
	if err == nil || ctx.Err() != nil {
		return err
	}
	return etcdscan.WaitKeys(ctx, o.lowest, n)
}

// Dynamic is a dynamic client of the API server r reads through, for the
// commands that write through it; without one, a refusal saying that
// what (a sentence's start: "fixes go") goes through it.
func (r *Read) Dynamic(what string) (dynamic.Interface, error) {
	if r.API == nil {
		return nil, fmt.Errorf("refused: %s through the API server (%s); nothing was changed", what, r.Why)
	}
	dyn, err := dynamic.NewForConfig(r.API.Config)
	if err != nil {
		return nil, fmt.Errorf("api server client: %w", err)
	}
	return dyn, nil
}
