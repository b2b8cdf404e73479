package etcdwrite

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// ReadBackTimeout bounds the read-back of one key after writes.
const ReadBackTimeout = 10 * time.Second

// readBackFailLimit is how many read-backs in a row may fail before the
// keys left are reported unread instead of waited for one by one.
const readBackFailLimit = 3

// ReadBackContext is the context of one key's read-back after writes: its
// own, bounded by ReadBackTimeout and not by ctx's deadline or cancellation,
// so that a command whose time ran out (a long snapshot, a stop) still
// learns what became of every key it wrote. ctx's values are kept.
func ReadBackContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), ReadBackTimeout)
}

// ReadBacks runs the read-backs of a run's keys, each on a context of its
// own. When readBackFailLimit of them fail in a row, etcd is not answering:
// the keys left are not waited for one by one (that could take
// ReadBackTimeout per key), and fail at once with the reason.
type ReadBacks struct {
	// Ctx is the command's context; each read-back gets its own (ReadBackContext).
	Ctx     context.Context
	failed  int
	lastErr error
}

// GaveUp says etcd did not answer the last read-backs: each one more fails
// at once.
func (r *ReadBacks) GaveUp() bool { return r.failed >= readBackFailLimit }

// Do runs one key's read-back.
func (r *ReadBacks) Do(read func(ctx context.Context) error) error {
	if r.failed >= readBackFailLimit {
		return fmt.Errorf("not read back: etcd did not answer the last %d read-backs (%v)", r.failed, r.lastErr)
	}
	ctx, cancel := ReadBackContext(r.Ctx)
	defer cancel()
	if err := read(ctx); err != nil {
		r.failed++
		r.lastErr = err
		return err
	}
	r.failed = 0
	return nil
}

// Get reads key back, sending the read again while etcd is paused.
func (r *ReadBacks) Get(kv clientv3.KV, key string) (resp *clientv3.GetResponse, err error) {
	err = r.Do(func(ctx context.Context) (err error) {
		resp, err = GetRetrying(ctx, kv, key)
		return err
	})
	return resp, err
}

// GetRetrying reads key on ctx (a read-back's own, see readBacks), sending
// the read again while etcd is paused (no leader, a lost member).
func GetRetrying(ctx context.Context, kv clientv3.KV, key string) (*clientv3.GetResponse, error) {
	backoff := 100 * time.Millisecond
	for {
		resp, err := kv.Get(ctx, key)
		if err == nil || !Transient(err) || ctx.Err() != nil {
			return resp, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 2*time.Second)
	}
}

// GetAll reads keys in one read-only transaction, each Get with opts: one
// request instead of one a key. It fails when etcd refuses the
// transaction (a --max-txn-ops below len(keys)) or answers other than one
// range for each key; kine serves no such transaction.
func GetAll(ctx context.Context, kv clientv3.KV, keys []string, opts ...clientv3.OpOption) ([]*clientv3.GetResponse, error) {
	ops := make([]clientv3.Op, len(keys))
	for i, k := range keys {
		ops[i] = clientv3.OpGet(k, opts...)
	}
	resp, err := kv.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		return nil, err
	}
	if len(resp.Responses) != len(ops) {
		return nil, fmt.Errorf("read %d keys: %d answers", len(ops), len(resp.Responses))
	}
	out := make([]*clientv3.GetResponse, len(ops))
	for i, r := range resp.Responses {
		rr := r.GetResponseRange()
		if rr == nil {
			return nil, fmt.Errorf("read %s: no range in the answer", keys[i])
		}
		out[i] = (*clientv3.GetResponse)(rr)
	}
	return out, nil
}
