// Package etcdscan walks the Kubernetes keyspace in etcd and classifies the
// keys that Kubernetes can no longer manage.
package etcdscan

import (
	"bytes"
	"context"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/time/rate"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Store is a read-only view of an etcd keyspace at one revision.
type Store interface {
	// Revision is the revision every read is made at.
	Revision() int64
	// Range calls fn for each key in [start, end), in key order, reading at
	// most the store's page size per request. keysOnly leaves values empty.
	Range(ctx context.Context, start, end string, keysOnly bool, fn func(*mvccpb.KeyValue) error) error
	// First returns the first key in [start, end), or nil.
	First(ctx context.Context, start, end string) (*mvccpb.KeyValue, error)
	// Get returns one key, or nil when it does not exist.
	Get(ctx context.Context, key string) (*mvccpb.KeyValue, error)
}

// DefaultPageSize is how many keys one range request asks for.
const DefaultPageSize = 500

// EtcdStore reads a live etcd at a fixed revision. On etcd 3.7 and later it
// uses the RangeStream RPC, whose chunks the server bounds by its
// --max-request-bytes and computes without counting the rest of the range;
// on older servers it pages with Range and a limit of pageSize keys. (A
// limited Range counts every remaining key of the range on the server, which
// makes paging a large range quadratic; see README, Performance.)
type EtcdStore struct {
	kv       clientv3.KV
	rev      int64
	pageSize int64
	// paged is set once the server has said it has no RangeStream, or when
	// streaming is turned off.
	paged bool
	// limit paces reads, so a scan leaves etcd room for its other clients.
	limit *rate.Limiter
	// pacer, when set, paces reads instead of limit.
	pacer Pacer
}

// Pacer paces a store's reads by more than a fixed pace (pkg/pace's
// follows the latency of the member read).
type Pacer interface {
	// Wait returns once n more keys may be read, or ctx's error.
	Wait(ctx context.Context, n int) error
}

// DefaultMaxKeysPerSecond is the default pace of a scan: at a million keys
// it keeps another client's read p99 where it is during an etcdctl dump
// (bench/results.md), while finishing in about ten seconds.
const DefaultMaxKeysPerSecond = 100000

// SetMaxKeysPerSecond paces reads to at most n keys a second (0: no limit).
// A paced stream pushes back on the server, which then sends more slowly.
func (s *EtcdStore) SetMaxKeysPerSecond(n int) {
	if n > 0 {
		s.limit = rate.NewLimiter(rate.Limit(n), max(n/10, 1000))
	}
}

// SetPacer paces reads by p instead of SetMaxKeysPerSecond's fixed pace
// (nil: that pace again). A paced stream pushes back on the server.
func (s *EtcdStore) SetPacer(p Pacer) { s.pacer = p }

func (s *EtcdStore) pace(ctx context.Context, n int) error {
	if s.pacer != nil {
		return s.pacer.Wait(ctx, n)
	}
	if s.limit == nil {
		return nil
	}
	return WaitKeys(ctx, s.limit, n)
}

// WaitKeys waits until l allows n keys read, in steps of at most its
// burst (a page may hold more keys than the burst).
func WaitKeys(ctx context.Context, l *rate.Limiter, n int) error {
	for n > 0 {
		k := min(n, l.Burst())
		if err := l.WaitN(ctx, k); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

// DisableStreaming makes the store page with unary Range requests only.
func (s *EtcdStore) DisableStreaming() { s.paged = true }

// NewEtcdStore pins the current revision of the cluster: every later read is
// made at it, so the whole scan sees one consistent keyspace.
func NewEtcdStore(ctx context.Context, kv clientv3.KV, pageSize int64) (*EtcdStore, error) {
	if pageSize <= 0 {
		pageSize = DefaultPageSize
	}
	resp, err := kv.Get(ctx, "\x00", clientv3.WithCountOnly())
	if err != nil {
		return nil, fmt.Errorf("read current etcd revision: %w", err)
	}
	return &EtcdStore{kv: kv, rev: resp.Header.Revision, pageSize: pageSize}, nil
}

// Revision implements Store.
func (s *EtcdStore) Revision() int64 { return s.rev }

// Range implements Store.
func (s *EtcdStore) Range(ctx context.Context, start, end string, keysOnly bool, fn func(*mvccpb.KeyValue) error) error {
	if !s.paged {
		streamed, err := s.rangeStream(ctx, start, end, keysOnly, fn)
		if streamed {
			return err
		}
		s.paged = true
	}
	return s.rangePaged(ctx, start, end, keysOnly, fn)
}

// rangeStream reads [start, end) through RangeStream. It returns false when
// the server does not implement it, before any key was handed to fn.
func (s *EtcdStore) rangeStream(ctx context.Context, start, end string, keysOnly bool, fn func(*mvccpb.KeyValue) error) (bool, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithRev(s.rev)}
	if keysOnly {
		opts = append(opts, clientv3.WithKeysOnly())
	}
	ch, err := s.kv.GetStream(ctx, start, opts...)
	if err != nil {
		if status.Code(err) == codes.Unimplemented {
			return false, nil
		}
		return true, fmt.Errorf("stream %q at revision %d: %w", start, s.rev, err)
	}
	// Stop the stream and let its goroutine finish on every way out.
	defer func() {
		cancel()
		for range ch {
		}
	}()
	received := false
	for r := range ch {
		if err := r.Err(); err != nil {
			if !received && status.Code(err) == codes.Unimplemented {
				return false, nil
			}
			return true, fmt.Errorf("stream %q at revision %d: %w", start, s.rev, err)
		}
		if err := s.pace(ctx, len(r.Kvs)); err != nil {
			return true, err
		}
		for _, kv := range r.Kvs {
			received = true
			if err := fn(kv); err != nil {
				return true, err
			}
		}
	}
	return true, ctx.Err()
}

// keysPerIndexRead is how many pages of keys one keys-only read fetches.
const keysPerIndexRead = 20

// rangePaged reads [start, end) with unary Range requests. A Range with a
// limit makes etcd count every remaining key of the range, so paging a
// large range that way is quadratic. Instead, one keys-only request fetches
// the next keysPerIndexRead pages' worth of keys (the count is paid once per
// that many pages), and each page of values is then read as the exact range
// between two of those keys, with no limit and so no extra count.
func (s *EtcdStore) rangePaged(ctx context.Context, start, end string, keysOnly bool, fn func(*mvccpb.KeyValue) error) error {
	key := start
	for {
		if err := s.pace(ctx, int(s.pageSize)); err != nil {
			return err
		}
		resp, err := s.kv.Get(ctx, key, clientv3.WithRange(end), clientv3.WithRev(s.rev),
			clientv3.WithLimit(s.pageSize*keysPerIndexRead), clientv3.WithKeysOnly())
		if err != nil {
			return fmt.Errorf("range %q at revision %d: %w", key, s.rev, err)
		}
		kvs := resp.Kvs
		if len(kvs) == 0 {
			return nil
		}
		next := string(kvs[len(kvs)-1].Key) + "\x00"
		if keysOnly {
			for _, kv := range kvs {
				if err := fn(kv); err != nil {
					return err
				}
			}
		} else {
			for i := 0; i < len(kvs); i += int(s.pageSize) {
				lo, hi := string(kvs[i].Key), next
				if j := i + int(s.pageSize); j < len(kvs) {
					hi = string(kvs[j].Key)
				}
				if i > 0 {
					if err := s.pace(ctx, int(s.pageSize)); err != nil {
						return err
					}
				}
				page, err := s.kv.Get(ctx, lo, clientv3.WithRange(hi), clientv3.WithRev(s.rev))
				if err != nil {
					return fmt.Errorf("range %q at revision %d: %w", lo, s.rev, err)
				}
				for _, kv := range page.Kvs {
					if err := fn(kv); err != nil {
						return err
					}
				}
			}
		}
		if !resp.More {
			return nil
		}
		key = next
	}
}

// First implements Store.
func (s *EtcdStore) First(ctx context.Context, start, end string) (*mvccpb.KeyValue, error) {
	resp, err := s.kv.Get(ctx, start, clientv3.WithRange(end), clientv3.WithRev(s.rev), clientv3.WithLimit(1), clientv3.WithKeysOnly())
	if err != nil {
		return nil, fmt.Errorf("seek %q at revision %d: %w", start, s.rev, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, nil
	}
	return resp.Kvs[0], nil
}

// Get implements Store.
func (s *EtcdStore) Get(ctx context.Context, key string) (*mvccpb.KeyValue, error) {
	resp, err := s.kv.Get(ctx, key, clientv3.WithRev(s.rev))
	if err != nil {
		return nil, fmt.Errorf("get %q at revision %d: %w", key, s.rev, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, nil
	}
	return resp.Kvs[0], nil
}

// PrefixEnd returns the end of the range that holds every key starting with prefix.
func PrefixEnd(prefix string) string { return clientv3.GetPrefixRangeEnd(prefix) }

// KeyGetter reads one key: a Store, or any source with Get.
type KeyGetter interface {
	Get(ctx context.Context, key string) (*mvccpb.KeyValue, error)
}

// GetCopy is store.Get with the key-value copied out of the store's memory
// under its fault guard: a db file's key-values alias its memory map,
// which faults when the file shrank or its disk cannot read a page; what
// GetCopy returns is the caller's to read (nil when the key does not
// exist), and a fault is the store's error, never a crash.
func GetCopy(ctx context.Context, store KeyGetter, key string) (kv *mvccpb.KeyValue, err error) {
	kv, err = store.Get(ctx, key)
	if err != nil || kv == nil {
		return kv, err
	}
	if g, ok := guardOf(store); ok {
		defer g.Guard(&err)()
	}
	return &mvccpb.KeyValue{Key: bytes.Clone(kv.Key), Value: bytes.Clone(kv.Value), CreateRevision: kv.CreateRevision,
		ModRevision: kv.ModRevision, Version: kv.Version, Lease: kv.Lease}, nil
}
