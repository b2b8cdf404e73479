package repair

import (
	"context"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdwrite"
)

// GuardedDelete deletes each entry's key only if its mod revision is still
// the one in the entry and every key whose absence made it a ghost (its
// namespace key, its CRD key) is still absent: the etcd witness is checked
// again inside the deleting transaction. A key changed or deleted since, or
// whose witness changed, is skipped, never deleted. It then reads every key
// back, each on a context of its own (ReadBackContext), so every key has an
// outcome even when ctx ran out, and reports one still there.
//
// journal, when set, is told each key's outcome as its transaction returns,
// and again when the read-back changes what it says.
func GuardedDelete(ctx context.Context, kv clientv3.KV, entries []backup.Entry, pacing etcdwrite.Pacing, journal func(etcdwrite.Result)) ([]etcdwrite.Result, error) {
	return guardedDelete(ctx, kv, entries, pacing, journal, nil)
}

// beforeDelete is work that must be done right before the transaction that
// deletes an entry, and only when that transaction is sent: setting the
// volume of a claim to Retain.
type beforeDelete interface {
	// needs reports whether entry i needs the work. It is asked in order,
	// once the work of every entry before i is done.
	needs(i int) bool
	// run does the work for entry i; an error stops the deletes before i.
	run(ctx context.Context, i int) error
}

// DeleteEntries deletes what a verified backup holds (entries), each key
// compared on the revision it was judged at and on the absence of the keys
// its verdict rests on, in paced, size-bounded transactions, each key read
// back: the guarded delete every command that deletes keys shares.
func DeleteEntries(ctx context.Context, kv clientv3.KV, entries []backup.Entry, pacing etcdwrite.Pacing, journal func(etcdwrite.Result)) ([]etcdwrite.Result, error) {
	return guardedDelete(ctx, kv, entries, pacing, journal, nil)
}

// guardedDelete is GuardedDelete with before's work done right before the
// transaction of each entry that needs it (deleteInSteps).
func guardedDelete(ctx context.Context, kv clientv3.KV, entries []backup.Entry, pacing etcdwrite.Pacing, journal func(etcdwrite.Result), before beforeDelete) ([]etcdwrite.Result, error) {
	if journal == nil {
		journal = func(etcdwrite.Result) {}
	}
	results := make([]etcdwrite.Result, len(entries))
	for i, e := range entries {
		results[i] = etcdwrite.Result{Key: e.Key, Outcome: etcdwrite.NotAttempted, Detail: "not attempted: the deletes stopped before it"}
	}
	// lost marks keys whose transaction was sent again after an error: the
	// first try may have been applied with its reply lost.
	lost := map[int]bool{}
	// spec is the guarded run of the entries idx.
	spec := func(idx []int) etcdwrite.Spec {
		return etcdwrite.Spec{N: len(idx),
			Cmp: func(j int) []clientv3.Cmp {
				e := entries[idx[j]]
				cmps := []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(e.Key), "=", e.ModRevision)}
				for _, a := range e.Absent {
					cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(a), "=", 0))
				}
				return cmps
			},
			Op:     func(j int) clientv3.Op { return clientv3.OpDelete(entries[idx[j]].Key) },
			OrElse: func(j int) []clientv3.Op { return []clientv3.Op{clientv3.OpGet(entries[idx[j]].Key)} },
			// Where a transaction takes one compare (kine), the witnesses are
			// read just before the delete instead of inside it.
			Check: func(ctx context.Context, j int) (bool, error) {
				for _, a := range entries[idx[j]].Absent {
					resp, err := kv.Get(ctx, a)
					if err != nil {
						return false, fmt.Errorf("read %s: %w", a, err)
					}
					if len(resp.Kvs) > 0 {
						return false, nil
					}
				}
				return true, nil
			},
			Done: func(j int, ok bool, _ int64) {
				i := idx[j]
				results[i] = etcdwrite.Result{Key: entries[i].Key, Outcome: etcdwrite.Deleted, Detail: leaseNote(entries[i])}
				if !ok {
					results[i] = etcdwrite.Result{Key: entries[i].Key, Outcome: etcdwrite.SkippedChanged}
				}
				journal(results[i])
			},
			Uncertain: func(js []int) {
				for _, j := range js {
					lost[idx[j]] = true
				}
			}}
	}
	var err error
	if before == nil {
		all := make([]int, len(entries))
		for i := range all {
			all[i] = i
		}
		err = etcdwrite.Run(ctx, kv, pacing, spec(all))
	} else {
		err = deleteInSteps(ctx, kv, pacing, len(entries), spec, before)
	}
	// Verify: a delete is only reported once the key is really gone, and a
	// skip says what the key is now. When the deletes stopped on an error,
	// the keys left are read back too: the transaction in flight may have
	// been applied although its reply was lost. Each read-back has its own
	// context: ctx may have run out, and a key that cannot be read back gets
	// that as its outcome while the others are still read.
	rb := &etcdwrite.ReadBacks{Ctx: ctx}
	// Only the keys sent can have been deleted: those attempted, and the
	// transaction that was in flight when the deletes stopped (at most a
	// batch past the last attempted). A key never sent stays as it is,
	// not attempted, without a read.
	sent := 0
	for i, r := range results {
		if r.Outcome != etcdwrite.NotAttempted {
			sent = i + 1
		}
	}
	sent = min(len(results), sent+pacing.Normalized().BatchSize)
	keys := make([]string, sent)
	for i := range keys {
		keys[i] = results[i].Key
	}
	got, errs := readBack(rb, kv, keys, pacing)
	for i, r := range results[:sent] {
		resp, verr := got[i], errs[i]
		switch {
		case verr != nil:
			if err == nil {
				err = fmt.Errorf("verify %s: %w", r.Key, verr)
			}
			switch r.Outcome {
			case etcdwrite.NotAttempted:
				results[i].Detail = fmt.Sprintf("outcome unknown: the deletes stopped and the key could not be read back (%v); run `regghost scan` to see", verr)
			case etcdwrite.Deleted:
				results[i].Detail = withNote(fmt.Sprintf("its transaction deleted it, but it could not be read back (%v)", verr), leaseNote(entries[i]))
			case etcdwrite.SkippedChanged:
				results[i].Detail = fmt.Sprintf("left alone: it or a key its verdict rests on changed since the scan; it could not be read back (%v)", verr)
			}
		case r.Outcome == etcdwrite.NotAttempted && len(resp.Kvs) == 0:
			results[i] = etcdwrite.Result{Key: r.Key, Outcome: etcdwrite.Deleted, Detail: withNote("gone when read back after the deletes stopped", leaseNote(entries[i]))}
		case r.Outcome == etcdwrite.NotAttempted:
			results[i].Detail = "still present when read back after the deletes stopped; left alone"
		case r.Outcome == etcdwrite.Deleted && len(resp.Kvs) > 0:
			results[i] = etcdwrite.Result{Key: r.Key, Outcome: etcdwrite.StillPresent, Detail: fmt.Sprintf("still in etcd at revision %d after the delete", resp.Kvs[0].ModRevision)}
		case r.Outcome == etcdwrite.SkippedChanged && len(resp.Kvs) == 0 && lost[i]:
			results[i] = etcdwrite.Result{Key: r.Key, Outcome: etcdwrite.Deleted, Detail: withNote("deleted by a try whose reply was lost (etcd paused); read back: gone", leaseNote(entries[i]))}
		case r.Outcome == etcdwrite.SkippedChanged && len(resp.Kvs) == 0:
			results[i] = etcdwrite.Result{Key: r.Key, Outcome: etcdwrite.SkippedGone, Detail: "deleted by someone else since the scan"}
		case r.Outcome == etcdwrite.SkippedChanged && resp.Kvs[0].ModRevision != entries[i].ModRevision:
			results[i].Detail = fmt.Sprintf("changed since the scan (mod revision %d, now %d); left alone", entries[i].ModRevision, resp.Kvs[0].ModRevision)
		case r.Outcome == etcdwrite.SkippedChanged:
			results[i].Detail = "no longer a ghost: " + reappeared(rb, kv, entries[i].Absent) + " since the scan; left alone"
		}
		if results[i] != r {
			journal(results[i])
		}
	}
	return results, err
}

// readBackRate is how many read-back transactions a second go for one
// delete transaction a second: reads cost etcd less than writes, and the
// read-back takes a quarter of the deletes' time.
const readBackRate = 4

// readBack reads each key back, keys only (an outcome needs the key's
// presence and mod revision, never its value), in read-only transactions
// of at most pacing's batch of keys, paced at readBackRate times the
// deletes' rate: never one request per key as fast as etcd answers, which
// other clients' writes would wait behind. kine serves one key a
// transaction: one read each there. errs[i] is key i's read error.
func readBack(rb *etcdwrite.ReadBacks, kv clientv3.KV, keys []string, pacing etcdwrite.Pacing) ([]*clientv3.GetResponse, []error) {
	p := pacing.Normalized()
	got, errs := make([]*clientv3.GetResponse, len(keys)), make([]error, len(keys))
	batch := p.BatchSize
	if p.OneKey {
		batch = 1
	}
	interval := time.Duration(float64(time.Second) / (p.PerSecond * readBackRate))
	for start := 0; start < len(keys); start += batch {
		end := min(start+batch, len(keys))
		if start > 0 && !rb.GaveUp() {
			time.Sleep(interval)
		}
		one := func(i int) {
			errs[i] = rb.Do(func(ctx context.Context) (err error) {
				got[i], err = kv.Get(ctx, keys[i], clientv3.WithKeysOnly())
				return err
			})
		}
		if end-start == 1 {
			one(start)
			continue
		}
		verr := rb.Do(func(ctx context.Context) error {
			batch, err := etcdwrite.GetAll(ctx, kv, keys[start:end], clientv3.WithKeysOnly())
			copy(got[start:end], batch)
			return err
		})
		if verr != nil {
			// Each key on its own: one that cannot be read back gets
			// that as its outcome, and the others are still read.
			for j := start; j < end; j++ {
				one(j)
			}
		}
	}
	return got, errs
}

// deleteInSteps sends the deletes in order, with before's work done right
// before the transaction of each entry that needs it. Such an entry gets a
// transaction of its own, sent right after the work: the two are one step,
// so a stop asked for during the work waits for that transaction, and the
// work is never done for a delete that is not sent (after a stop, an error,
// or the deadline). The entries between are batched as usual; the pace
// holds across the steps.
func deleteInSteps(ctx context.Context, kv clientv3.KV, pacing etcdwrite.Pacing, n int, spec func([]int) etcdwrite.Spec, before beforeDelete) error {
	pacing = pacing.Normalized()
	interval := time.Duration(float64(time.Second) / pacing.PerSecond)
	var next time.Time // when the next transaction may be sent
	send := func(idx []int, p etcdwrite.Pacing) error {
		if len(idx) == 0 {
			return nil
		}
		if err := pause(ctx, p.Stop, next); err != nil {
			return err
		}
		err := etcdwrite.Run(ctx, kv, p, spec(idx))
		next = time.Now().Add(interval)
		if err != nil && err != etcdwrite.ErrInterrupted {
			return fmt.Errorf("deleting keys %d to %d of %d: %w", idx[0]+1, idx[len(idx)-1]+1, n, err)
		}
		return err
	}
	var run []int
	for i := 0; i < n; i++ {
		if !before.needs(i) {
			run = append(run, i)
			continue
		}
		if err := send(run, pacing); err != nil {
			return err
		}
		run = nil
		if err := pause(ctx, pacing.Stop, next); err != nil {
			return err
		}
		if err := before.run(ctx, i); err != nil {
			return err
		}
		step := pacing
		step.Stop = nil
		if err := send([]int{i}, step); err != nil {
			return err
		}
	}
	return send(run, pacing)
}

// pause waits until t. It returns ErrInterrupted when stop is closed first
// (or already), and ctx's error when ctx ends first.
func pause(ctx context.Context, stop <-chan struct{}, t time.Time) error {
	select {
	case <-stop:
		return etcdwrite.ErrInterrupted
	default:
	}
	d := time.Until(t)
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-stop:
		return etcdwrite.ErrInterrupted
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// withNote appends a note to a result's detail.
func withNote(detail, note string) string {
	switch {
	case note == "":
		return detail
	case detail == "":
		return note
	}
	return detail + "; " + note
}

// reappeared names the witness keys that exist again.
func reappeared(rb *etcdwrite.ReadBacks, kv clientv3.KV, absent []string) string {
	var back []string
	for _, a := range absent {
		var resp *clientv3.GetResponse
		err := rb.Do(func(ctx context.Context) (err error) {
			resp, err = kv.Get(ctx, a, clientv3.WithCountOnly())
			return err
		})
		if err == nil && resp.Count > 0 {
			back = append(back, a)
		}
	}
	if len(back) == 0 {
		return "a key its verdict rests on changed"
	}
	return strings.Join(back, ", ") + " exists again"
}

// leaseNote is what a result says about a deleted key whose lease TTL was
// not known: a restore cannot give it back the lease it had.
func leaseNote(e backup.Entry) string {
	if e.LeaseTTLUnknown == "" {
		return ""
	}
	return "lease TTL unknown (" + e.LeaseTTLUnknown + "): a restore cannot give the key back the lease it had"
}
