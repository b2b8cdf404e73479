package repair

import (
	"context"
	"fmt"

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
)

// Result is the outcome for one key, with a sentence for humans.
type Result struct {
	Key     string  `json:"key"`
	Outcome Outcome `json:"outcome"`
	Detail  string  `json:"detail,omitempty"`
}

// GuardedDelete deletes each entry's key only if its mod revision is still
// the one in the entry; a key changed or deleted since is skipped, never
// deleted. It then reads every key back and reports one still there.
func GuardedDelete(ctx context.Context, kv clientv3.KV, entries []Entry, pacing Pacing) ([]Result, error) {
	results := make([]Result, len(entries))
	err := guardedTxn(ctx, kv, pacing, len(entries),
		func(i int) clientv3.Cmp {
			return clientv3.Compare(clientv3.ModRevision(entries[i].Key), "=", entries[i].ModRevision)
		},
		func(i int) clientv3.Op { return clientv3.OpDelete(entries[i].Key) },
		func(i int, ok bool) {
			results[i] = Result{Key: entries[i].Key, Outcome: Deleted}
			if !ok {
				results[i] = Result{Key: entries[i].Key, Outcome: SkippedChanged}
			}
		})
	if err != nil {
		return results, err
	}
	// Verify: a delete is only reported once the key is really gone, and a
	// skip says what the key is now.
	for i, r := range results {
		resp, err := kv.Get(ctx, r.Key)
		if err != nil {
			return results, fmt.Errorf("verify %s: %w", r.Key, err)
		}
		switch {
		case r.Outcome == Deleted && len(resp.Kvs) > 0:
			results[i] = Result{Key: r.Key, Outcome: StillPresent, Detail: fmt.Sprintf("still in etcd at revision %d after the delete", resp.Kvs[0].ModRevision)}
		case r.Outcome == SkippedChanged && len(resp.Kvs) == 0:
			results[i] = Result{Key: r.Key, Outcome: SkippedGone, Detail: "deleted by someone else since the scan"}
		case r.Outcome == SkippedChanged:
			results[i].Detail = fmt.Sprintf("changed since the scan (mod revision %d, now %d); left alone", entries[i].ModRevision, resp.Kvs[0].ModRevision)
		}
	}
	return results, nil
}
