package repair

import (
	"bytes"
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Restore writes back each backed-up key that is absent now, with a
// transaction that compares create_revision == 0 so that it never overwrites
// a key someone created since. A key already holding the same bytes counts as
// restored before (restore is idempotent); one holding other bytes is a
// conflict and is left alone. With dryRun nothing is written.
// Leases are not re-attached: the original lease has expired with the keys.
func Restore(ctx context.Context, kv clientv3.KV, b *Backup, pacing Pacing, dryRun bool) ([]Result, error) {
	results := make([]Result, len(b.Entries))
	var todo []int
	for i, e := range b.Entries {
		resp, err := kv.Get(ctx, e.Key)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", e.Key, err)
		}
		switch {
		case len(resp.Kvs) == 0:
			todo = append(todo, i)
			results[i] = Result{Key: e.Key, Outcome: WouldRestore}
		case bytes.Equal(resp.Kvs[0].Value, e.Value):
			results[i] = Result{Key: e.Key, Outcome: AlreadyPresent, Detail: "already holds the backed-up bytes"}
		default:
			results[i] = Result{Key: e.Key, Outcome: Conflict, Detail: fmt.Sprintf("exists with other content (mod revision %d); left alone", resp.Kvs[0].ModRevision)}
		}
	}
	if dryRun || len(todo) == 0 {
		return results, nil
	}
	err := guardedTxn(ctx, kv, pacing, len(todo),
		func(j int) []clientv3.Cmp {
			return []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(b.Entries[todo[j]].Key), "=", 0)}
		},
		func(j int) clientv3.Op { e := b.Entries[todo[j]]; return clientv3.OpPut(e.Key, string(e.Value)) },
		func(j int, ok bool) {
			i := todo[j]
			results[i] = Result{Key: b.Entries[i].Key, Outcome: Restored}
			if !ok {
				results[i] = Result{Key: b.Entries[i].Key, Outcome: Conflict, Detail: "created by someone else during the restore; left alone"}
			}
		})
	if err != nil {
		return results, err
	}
	for _, i := range todo {
		if results[i].Outcome != Restored {
			continue
		}
		resp, err := kv.Get(ctx, b.Entries[i].Key)
		if err != nil {
			return results, fmt.Errorf("verify %s: %w", b.Entries[i].Key, err)
		}
		if len(resp.Kvs) == 0 || !bytes.Equal(resp.Kvs[0].Value, b.Entries[i].Value) {
			results[i] = Result{Key: b.Entries[i].Key, Outcome: StillPresent, Detail: "read back differs from the backup after the restore"}
		}
	}
	return results, nil
}
