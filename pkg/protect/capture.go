package protect

import (
	"context"
	"fmt"
	"slices"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdwrite"
)

// Capture reads each wanted key as etcd holds it now, into a backup entry
// with its raw bytes, revisions and what is left of its lease. A key gone
// or changed since the plan judged it is left out with its outcome, or
// stops the capture when it is Required.
func Capture(ctx context.Context, kv etcdwrite.KVLease, ds etcdwrite.Datastore, wants []Want) ([]backup.Entry, []etcdwrite.Result, error) {
	var entries []backup.Entry
	var skipped []etcdwrite.Result
	// What a lease has left is asked once per lease, not once per key: a
	// lease holds up to a thousand events, and each ask is forwarded to
	// etcd's leader.
	type left struct {
		ttl     int64
		unknown string
	}
	leases := map[int64]left{}
	read := batchedGets(ctx, kv, ds, wants)
	for i, w := range wants {
		key := w.Entry.Key
		resp, err := read(i)
		if err != nil {
			return nil, nil, fmt.Errorf("read %s: %w", key, err)
		}
		var why etcdwrite.Result
		switch {
		case len(resp.Kvs) == 0:
			why = etcdwrite.Result{Key: key, Outcome: etcdwrite.SkippedGone, Detail: "deleted by someone else since the plan"}
		case w.ModRevision != 0 && resp.Kvs[0].ModRevision != w.ModRevision:
			why = etcdwrite.Result{Key: key, Outcome: etcdwrite.SkippedChanged,
				Detail: fmt.Sprintf("changed since the plan (mod revision %d, now %d); left alone", w.ModRevision, resp.Kvs[0].ModRevision)}
		}
		if why.Key != "" {
			if w.Required {
				return nil, nil, fmt.Errorf("%s: %s; plan again", key, why.Detail)
			}
			skipped = append(skipped, why)
			continue
		}
		cur := resp.Kvs[0]
		e := backup.EntryOf(cur)
		e.Classes, e.Reason, e.Absent, e.Witnesses, e.Role = w.Entry.Classes, w.Entry.Reason, w.Entry.Absent, w.Entry.Witnesses, w.Entry.Role
		switch {
		case cur.Lease != 0 && ds.Limited():
			// kine has no lease API: a key's lease is its TTL in seconds.
			e.LeaseTTL = cur.Lease
		case cur.Lease != 0:
			l, ok := leases[cur.Lease]
			if !ok {
				l.ttl, l.unknown = etcdwrite.LeaseTTL(ctx, kv, cur.Lease)
				leases[cur.Lease] = l
			}
			e.LeaseTTL, e.LeaseTTLUnknown = l.ttl, l.unknown
		}
		entries = append(entries, e)
	}
	return entries, skipped, nil
}

// captureBatch is how many keys one read of the capture asks for.
const captureBatch = 64

// batchedGets reads the wanted keys in read-only transactions of
// captureBatch keys, one request for each batch rather than one for each
// key (kine serves one key a transaction: one read each there); read(i)
// is want i's response, read in order, each batch when its first key is
// asked for.
func batchedGets(ctx context.Context, kv etcdwrite.KVLease, ds etcdwrite.Datastore, wants []Want) (read func(i int) (*clientv3.GetResponse, error)) {
	var got []*clientv3.GetResponse
	var from int
	return func(i int) (*clientv3.GetResponse, error) {
		if ds.Limited() {
			return kv.Get(ctx, wants[i].Entry.Key)
		}
		if i >= from+len(got) || i < from {
			from, got = i, nil
			end := min(i+captureBatch, len(wants))
			keys := make([]string, 0, end-i)
			for _, w := range wants[i:end] {
				keys = append(keys, w.Entry.Key)
			}
			var err error
			got, err = etcdwrite.GetAll(ctx, kv, keys)
			if err != nil {
				// A transaction etcd refuses (a --max-txn-ops below the
				// batch) or answers short: this batch a key at a time.
				got = nil
				for _, k := range keys {
					resp, err := kv.Get(ctx, k)
					if err != nil {
						return nil, err
					}
					got = append(got, resp)
				}
			}
		}
		return got[i-from], nil
	}
}

// recordNeeds sets each entry's Needs: the keys it rests on (its namespace,
// its CRD) that exist now, as it is captured, at their create revision,
// and were not absent when its verdict was made. A restore of the backup
// then never writes the key back where they are gone, nor into one created
// again since.
func recordNeeds(ctx context.Context, kv etcdwrite.KVLease, prefix string, entries []backup.Entry) error {
	created := map[string]int64{}
	for i := range entries {
		e := &entries[i]
		for _, w := range backup.Witnesses(prefix, e.Key) {
			if slices.Contains(e.Absent, w) {
				continue
			}
			rev, ok := created[w]
			if !ok {
				resp, err := kv.Get(ctx, w, clientv3.WithKeysOnly())
				if err != nil {
					return fmt.Errorf("read %s: %w", w, err)
				}
				if len(resp.Kvs) > 0 {
					rev = resp.Kvs[0].CreateRevision
				}
				created[w] = rev
			}
			if rev != 0 {
				e.Needs = append(e.Needs, backup.Present{Key: w, CreateRevision: rev})
			}
		}
	}
	return nil
}
