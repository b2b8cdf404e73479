package repair

import (
	"context"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Outcome is what happened to one key.
type Outcome string

// Outcomes of deletes and restores.
const (
	Deleted        Outcome = "deleted"
	SkippedChanged Outcome = "skipped-changed"
	SkippedGone    Outcome = "skipped-gone"
	StillPresent   Outcome = "still-present"
	Restored       Outcome = "restored"
	AlreadyPresent Outcome = "already-present"
	Conflict       Outcome = "conflict"
	WouldRestore   Outcome = "would-restore"
	// NotAttempted is a key left alone because the run stopped before it.
	NotAttempted Outcome = "not-attempted"
	// RestoredWithoutVolume is a claim written back whose volume is gone.
	RestoredWithoutVolume Outcome = "restored-without-volume"
	// LeftAsIs is a backup entry restore does not write back by design.
	LeftAsIs Outcome = "left-as-is"
)

// Result is the outcome for one key, with a sentence for humans.
type Result struct {
	Key     string  `json:"key"`
	Outcome Outcome `json:"outcome"`
	Detail  string  `json:"detail,omitempty"`
}

// GuardedDelete deletes each entry's key only if its mod revision is still
// the one in the entry and every key whose absence made it a ghost (its
// namespace key, its CRD key) is still absent: the etcd witness is checked
// again inside the deleting transaction. A key changed or deleted since, or
// whose witness changed, is skipped, never deleted. It then reads every key
// back and reports one still there.
//
// journal, when set, is told each key's outcome as its transaction returns,
// and again when the read-back changes what it says.
func GuardedDelete(ctx context.Context, kv clientv3.KV, entries []Entry, pacing Pacing, journal func(Result)) ([]Result, error) {
	if journal == nil {
		journal = func(Result) {}
	}
	results := make([]Result, len(entries))
	for i, e := range entries {
		results[i] = Result{Key: e.Key, Outcome: NotAttempted, Detail: "not attempted: the purge stopped before it"}
	}
	// lost marks keys whose transaction was sent again after an error: the
	// first try may have been applied with its reply lost.
	lost := map[int]bool{}
	err := guardedTxn(ctx, kv, pacing, txnSpec{n: len(entries),
		cmp: func(i int) []clientv3.Cmp {
			cmps := []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(entries[i].Key), "=", entries[i].ModRevision)}
			for _, a := range entries[i].Absent {
				cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(a), "=", 0))
			}
			return cmps
		},
		op:     func(i int) clientv3.Op { return clientv3.OpDelete(entries[i].Key) },
		orElse: func(i int) []clientv3.Op { return []clientv3.Op{clientv3.OpGet(entries[i].Key)} },
		// Where a transaction takes one compare (kine), the witnesses are
		// read just before the delete instead of inside it.
		check: func(ctx context.Context, i int) (bool, error) {
			for _, a := range entries[i].Absent {
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
		done: func(i int, ok bool, _ int64) {
			results[i] = Result{Key: entries[i].Key, Outcome: Deleted}
			if !ok {
				results[i] = Result{Key: entries[i].Key, Outcome: SkippedChanged}
			}
			journal(results[i])
		},
		uncertain: func(idx []int) {
			for _, i := range idx {
				lost[i] = true
			}
		}})
	// Verify: a delete is only reported once the key is really gone, and a
	// skip says what the key is now. When the deletes stopped on an error,
	// the keys left are read back too: the transaction in flight may have
	// been applied although its reply was lost.
	for i, r := range results {
		resp, verr := kv.Get(ctx, r.Key)
		if verr != nil {
			if err == nil {
				err = fmt.Errorf("verify %s: %w", r.Key, verr)
			}
			if r.Outcome == NotAttempted {
				results[i].Detail = "outcome unknown: the deletes stopped and the key could not be read back; run `regghost scan` to see"
			}
			continue
		}
		switch {
		case r.Outcome == NotAttempted && len(resp.Kvs) == 0:
			results[i] = Result{Key: r.Key, Outcome: Deleted, Detail: "gone when read back after the deletes stopped"}
		case r.Outcome == NotAttempted:
			results[i].Detail = "still present when read back after the deletes stopped; left alone"
		case r.Outcome == Deleted && len(resp.Kvs) > 0:
			results[i] = Result{Key: r.Key, Outcome: StillPresent, Detail: fmt.Sprintf("still in etcd at revision %d after the delete", resp.Kvs[0].ModRevision)}
		case r.Outcome == SkippedChanged && len(resp.Kvs) == 0 && lost[i]:
			results[i] = Result{Key: r.Key, Outcome: Deleted, Detail: "deleted by a try whose reply was lost (etcd paused); read back: gone"}
		case r.Outcome == SkippedChanged && len(resp.Kvs) == 0:
			results[i] = Result{Key: r.Key, Outcome: SkippedGone, Detail: "deleted by someone else since the scan"}
		case r.Outcome == SkippedChanged && resp.Kvs[0].ModRevision != entries[i].ModRevision:
			results[i].Detail = fmt.Sprintf("changed since the scan (mod revision %d, now %d); left alone", entries[i].ModRevision, resp.Kvs[0].ModRevision)
		case r.Outcome == SkippedChanged:
			results[i].Detail = "no longer a ghost: " + reappeared(ctx, kv, entries[i].Absent) + " since the scan; left alone"
		}
		if results[i] != r {
			journal(results[i])
		}
	}
	return results, err
}

// reappeared names the witness keys that exist again.
func reappeared(ctx context.Context, kv clientv3.KV, absent []string) string {
	var back []string
	for _, a := range absent {
		if resp, err := kv.Get(ctx, a, clientv3.WithCountOnly()); err == nil && resp.Count > 0 {
			back = append(back, a)
		}
	}
	if len(back) == 0 {
		return "a key its verdict rests on changed"
	}
	return strings.Join(back, ", ") + " exists again"
}
