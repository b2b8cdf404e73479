// Package etcdwrite sends regghost's writes to etcd: guarded transactions
// in the shapes the datastore serves (etcd, or kine's one key and one
// compare), paced and sent again across leader changes, the read-back of
// every key written, the writers' lock and lease TTLs, and the one list of
// outcomes a write reports.
package etcdwrite

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/time/rate"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// DefaultBatchSize keeps each transaction well below etcd's default
// --max-txn-ops of 128.
const DefaultBatchSize = 64

// DefaultRate is how many transactions per second a purge or restore sends,
// so that a large repair does not starve the API server.
const DefaultRate = 20

// Pacing bounds the transactions a repair sends.
type Pacing struct {
	BatchSize int
	PerSecond float64
	// Stop, when closed, stops the run between transactions (SIGINT).
	Stop <-chan struct{}
	// OneKey sends one key per transaction with only that key's revision
	// compared and a read as the failure branch: the only guarded shapes
	// kine serves. Other compares are checked by a read just before.
	OneKey bool
	// MaxRequestBytes is the largest request the etcd written to accepts
	// (its --max-request-bytes; DefaultMaxRequestBytes when unset): each
	// transaction carries at most that many bytes of keys, values and
	// compares.
	MaxRequestBytes int
}

// ErrInterrupted is returned when a run was asked to stop.
var ErrInterrupted = errors.New("interrupted: stopped between transactions")

// Normalized fills the batch size and rate a Pacing leaves unset (or out of range) with the defaults.
func (p Pacing) Normalized() Pacing {
	if p.BatchSize <= 0 || p.BatchSize > 128 {
		p.BatchSize = DefaultBatchSize
	}
	if p.PerSecond <= 0 {
		p.PerSecond = DefaultRate
	}
	if p.MaxRequestBytes <= 0 {
		p.MaxRequestBytes = DefaultMaxRequestBytes
	}
	return p
}

// maxTxnOps is etcd's default --max-txn-ops. It bounds the compares of a
// transaction as well as its operations.
const maxTxnOps = 128

// Spec is the per-key content of a guarded run (Run).
type Spec struct {
	N int
	// Cmp are the compares that must hold for key i to be written.
	Cmp func(i int) []clientv3.Cmp
	// Op is key i's write.
	Op func(i int) clientv3.Op
	// OrElse is the failure branch of a one-key transaction (kine takes a
	// guarded delete only with a read there); unused in batches.
	OrElse func(i int) []clientv3.Op
	// Check, in one-key mode, reads what the transaction cannot compare
	// (kine takes one compare) just before key i's transaction; false skips
	// the key as changed.
	Check func(ctx context.Context, i int) (bool, error)
	// Done reports each key with whether its compares held and the revision
	// of the transaction that handled it.
	Done func(i int, ok bool, rev int64)
	// Uncertain marks keys whose transaction was sent again after an error.
	Uncertain func(idx []int)
}

// Run runs one transaction per batch with the compares and an
// operation per key; compares shared by several keys of a batch (the same
// namespace key that must stay absent) are sent once, and a batch ends
// before its distinct compares pass maxTxnOps or its bytes pass
// pacing.MaxRequestBytes. A key whose write alone is larger than that is a
// *TooLargeError before any transaction is sent. A batch etcd (or the gRPC
// client) still refuses for its size is split in halves and sent again,
// down to one key. When a batch's compares fail (some key or witness
// changed), it falls back to one transaction per key so every other key is
// still handled. With pacing.OneKey every transaction holds one key and only
// the first of its compares; the others are read by spec.Check first.
func Run(ctx context.Context, kv clientv3.KV, pacing Pacing, spec Spec) error {
	pacing = pacing.Normalized()
	cmp := spec.Cmp
	if pacing.OneKey {
		pacing.BatchSize = 1
		cmp = func(i int) []clientv3.Cmp { return spec.Cmp(i)[:1] }
	}
	// Each key's bytes, its compares counted in full (shared ones are sent
	// once, so a batch is never larger than the sum).
	sizes := make([]int, spec.N)
	for i := range sizes {
		sizes[i] = opBytes(spec.Op(i))
		for _, c := range cmp(i) {
			sizes[i] += cmpBytes(c)
		}
		if sizes[i]+keyOverhead > pacing.MaxRequestBytes {
			return &TooLargeError{Key: string(spec.Op(i).KeyBytes()), Bytes: sizes[i] + keyOverhead, Limit: pacing.MaxRequestBytes}
		}
	}
	lim := rate.NewLimiter(rate.Limit(pacing.PerSecond), 1)
	run := func(idx []int) (bool, int64, error) {
		// A stop is honoured before every transaction, the halves of a
		// split and the one-key resends included.
		select {
		case <-pacing.Stop:
			return false, 0, ErrInterrupted
		default:
		}
		if err := lim.Wait(ctx); err != nil {
			return false, 0, err
		}
		var cmps []clientv3.Cmp
		seen := map[string]bool{}
		ops := make([]clientv3.Op, len(idx))
		for j, i := range idx {
			for _, c := range cmp(i) {
				if id := cmpID(c); !seen[id] {
					seen[id] = true
					cmps = append(cmps, c)
				}
			}
			ops[j] = spec.Op(i)
		}
		var orElse []clientv3.Op
		if len(idx) == 1 && pacing.OneKey && spec.OrElse != nil {
			orElse = spec.OrElse(idx[0])
		}
		// A leader election or a lost member is a pause: the transaction is
		// sent again with backoff until the command's deadline. Its compares
		// make a second try safe; a first try that was applied although its
		// reply was lost shows as a failed compare, which uncertain lets the
		// caller tell apart.
		backoff := 200 * time.Millisecond
		for {
			actx, cancel := context.WithTimeout(ctx, attemptTimeout)
			resp, err := kv.Txn(actx).If(cmps...).Then(ops...).Else(orElse...).Commit()
			cancel()
			if err == nil {
				return resp.Succeeded, resp.Header.Revision, nil
			}
			if !Transient(err) || ctx.Err() != nil {
				return false, 0, err
			}
			if spec.Uncertain != nil {
				spec.Uncertain(idx)
			}
			select {
			case <-ctx.Done():
				return false, 0, err
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, 5*time.Second)
		}
	}
	send := (&batches{run: run, spec: spec, sizes: sizes, limit: pacing.MaxRequestBytes}).send
	for start := 0; start < spec.N; {
		select {
		case <-pacing.Stop:
			return ErrInterrupted
		default:
		}
		var batch []int
		distinct := map[string]bool{}
		bytes := txnOverhead
		for i := start; i < spec.N && len(batch) < pacing.BatchSize; i++ {
			var fresh []string
			for _, c := range cmp(i) {
				if id := cmpID(c); !distinct[id] && !slices.Contains(fresh, id) {
					fresh = append(fresh, id)
				}
			}
			if len(batch) > 0 && (len(distinct)+len(fresh) > maxTxnOps || bytes+sizes[i] > pacing.MaxRequestBytes) {
				break
			}
			for _, id := range fresh {
				distinct[id] = true
			}
			bytes += sizes[i]
			batch = append(batch, i)
		}
		first, last := batch[0]+1, batch[len(batch)-1]+1
		start += len(batch)
		if pacing.OneKey && spec.Check != nil {
			ok, err := spec.Check(ctx, batch[0])
			if err != nil {
				return fmt.Errorf("check before key %d: %w", first, err)
			}
			if !ok {
				spec.Done(batch[0], false, 0)
				continue
			}
		}
		if err := send(batch); err != nil {
			if len(batch) == 1 {
				return fmt.Errorf("transaction for key %d: %w", first, err)
			}
			return fmt.Errorf("transaction for keys %d-%d: %w", first, last, err)
		}
	}
	return nil
}

// batches sends the batches of one Run.
type batches struct {
	run   func(idx []int) (bool, int64, error)
	spec  Spec
	sizes []int
	limit int
}

// send runs one batch, split in halves while etcd refuses it for its size
// or its number of operations (a member run with a --max-txn-ops lower
// than etcd's default); one key refused for its size is a *TooLargeError.
// A batch whose compares fail is sent again one key per transaction.
func (b *batches) send(batch []int) error {
	ok, rev, err := b.run(batch)
	if len(batch) > 1 && rpctypes.Error(err) == rpctypes.ErrTooManyOps {
		half := len(batch) / 2
		if err := b.send(batch[:half]); err != nil {
			return err
		}
		return b.send(batch[half:])
	}
	if tooLarge(err) {
		if len(batch) == 1 {
			return &TooLargeError{Key: string(b.spec.Op(batch[0]).KeyBytes()), Bytes: b.sizes[batch[0]] + keyOverhead, Limit: b.limit, Refused: err}
		}
		half := len(batch) / 2
		if err := b.send(batch[:half]); err != nil {
			return err
		}
		return b.send(batch[half:])
	}
	if err != nil {
		return err
	}
	if ok {
		for _, i := range batch {
			b.spec.Done(i, true, rev)
		}
		return nil
	}
	if len(batch) == 1 {
		b.spec.Done(batch[0], false, rev)
		return nil
	}
	for _, i := range batch {
		if err := b.send([]int{i}); err != nil {
			return err
		}
	}
	return nil
}

// cmpID identifies a compare (key, range end, target, result and value).
func cmpID(c clientv3.Cmp) string { return c.GetCompare().String() }

// attemptTimeout bounds one try of a transaction, so a member that died
// with the request in flight costs a retry, not the whole command.
const attemptTimeout = 10 * time.Second

// Transient reports whether an etcd error is a pause (no leader, a leader
// change, a request timed out or a connection lost, a member unavailable)
// rather than an answer: the request may be sent again.
func Transient(err error) bool {
	if err == nil {
		return false
	}
	switch rpctypes.Error(err) {
	case rpctypes.ErrNoLeader, rpctypes.ErrLeaderChanged, rpctypes.ErrTimeout, rpctypes.ErrTimeoutDueToLeaderFail,
		rpctypes.ErrTimeoutDueToConnectionLost, rpctypes.ErrTimeoutWaitAppliedIndex, rpctypes.ErrNotCapable,
		// The member's applied index trails its committed one by more than
		// etcd allows: it asks its clients to back off.
		rpctypes.ErrTooManyRequests:
		return true
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return true
	}
	return false
}
