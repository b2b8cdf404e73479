package space

import (
	"context"
	"hash/maphash"
	"sync"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/regghost/regghost/pkg/etcdscan"
)

// Options configure an Account.
type Options struct {
	// Prefix is the registry prefix, ending in "/".
	Prefix string
	// CompactRevision is etcd's compacted revision (0: never compacted),
	// which bounds each key's history live. Unused for a db file.
	CompactRevision int64
	// Top is how many keys the largest and most-revisions lists keep
	// (DefaultTop when 0, none when negative).
	Top int
	// File is set when the values come from a db file whose revisions
	// WalkFile counts: the live history bounds are then not made.
	File bool
}

// Account counts the values a scan reads: Wrap the scan's store, run the
// scan, then give its report to Ghosts. Live, it keeps a small record per
// key (its size and history bounds, 12 bytes and the map's own), to size
// the ghosts the scan finds; from a db file, the walk's record of each key
// serves.
type Account struct {
	o    Options
	seed maphash.Seed
	// mu guards what the wrapped store's reads count: a scan reads on one
	// goroutine, but the lock costs little and keeps a second reader safe.
	mu      sync.Mutex
	now     *tally
	keys    map[uint64]keyNow
	largest topHeap
	most    topHeap
	// pass is the scan's walk of the whole prefix Wrap observes.
	pass   *etcdscan.Pass
	ghosts *ghostTally
	walk   *fileWalk
}

// keyNow is what the account keeps of each key that exists now.
type keyNow struct {
	// bytes is the key's and its value's length.
	bytes uint32
	// histMin and histMax bound its older revisions held (live).
	histMin, histMax uint32
}

// NewAccount returns an account with nothing counted.
func NewAccount(o Options) *Account {
	if o.Top == 0 {
		o.Top = DefaultTop
	}
	top := max(o.Top, 0)
	return &Account{o: o, seed: maphash.MakeSeed(), now: newTally(o.Prefix), keys: map[uint64]keyNow{},
		largest: topHeap{n: top}, most: topHeap{n: top}}
}

// hash is the key's record's name in the account's maps.
func (a *Account) hash(key []byte) uint64 { return maphash.Bytes(a.seed, key) }

// Wrap returns store with the values of the scan's walk of the whole
// prefix counted as they are read (a walk of the keys alone, and every
// other read, is not).
func (a *Account) Wrap(store etcdscan.Store) etcdscan.Store {
	w, pass := etcdscan.ObservePass(store, a.o.Prefix, func(_ context.Context, kv *mvccpb.KeyValue) { a.count(kv) })
	a.mu.Lock()
	a.pass = pass
	a.mu.Unlock()
	return w
}

// counted says the scan's walk of the whole prefix went through the store
// Wrap returned.
func (a *Account) counted() bool {
	a.mu.Lock()
	pass := a.pass
	a.mu.Unlock()
	return pass != nil && pass.Seen()
}

// CountOutside counts the keys of store outside the prefix: kube-apiserver
// writes compact_rev_key at the root, and other clients may share etcd.
func (a *Account) CountOutside(ctx context.Context, store etcdscan.Store) error {
	fn := func(kv *mvccpb.KeyValue) error { a.count(kv); return nil }
	if err := store.Range(ctx, "\x00", a.o.Prefix, false, fn); err != nil {
		return err
	}
	// The end of the keyspace is "\x00" to etcd, "" to a db file.
	toEnd := ""
	if _, ok := store.(*etcdscan.EtcdStore); ok {
		toEnd = "\x00"
	}
	return store.Range(ctx, etcdscan.PrefixEnd(a.o.Prefix), toEnd, false, fn)
}

// count counts one key as it is now.
func (a *Account) count(kv *mvccpb.KeyValue) {
	size := int64(len(kv.Key) + len(kv.Value))
	u := Usage{Keys: 1, Bytes: size}
	var lo, hi int64
	if !a.o.File {
		lo, hi = historyBounds(kv, a.o.CompactRevision)
		u.HistoryRevisions, u.HistoryRevisionsMax = lo, hi
		u.HistoryBytes, u.HistoryBytesMax = lo*size, hi*size
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.now.add(kv.Key, u)
	if !a.o.File {
		// A db file's walk keeps each key's newest revision itself.
		a.keys[a.hash(kv.Key)] = keyNow{bytes: uint32(min(size, 1<<32-1)), histMin: uint32(min(lo, 1<<32-1)), histMax: uint32(min(hi, 1<<32-1))}
	}
	a.largest.offer(size, func() string { return string(kv.Key) }, [3]int64{})
	if !a.o.File {
		a.most.offer(hi+1, func() string { return string(kv.Key) }, [3]int64{lo + 1, 0, (hi + 1) * size})
	}
}

// historyBounds bounds the older revisions etcd holds of a key that exists
// now, from the key alone: every revision after the compacted revision c is
// held, and of those at or before it, the key's newest. Version counts the
// puts since the key was created.
//   - created after c: all its puts are held, the current one and
//     version-1 older ones;
//   - last written at or before c: the current revision alone;
//   - created at or before c, written since: the put kept at c and at most
//     version-2 puts after it, and no more than the revisions since c.
//
// Deletes, and the revisions of a key's earlier lives (deleted and created
// again), cannot be told from the key: the bounds leave them out.
func historyBounds(kv *mvccpb.KeyValue, c int64) (lo, hi int64) {
	switch {
	case kv.CreateRevision > c:
		n := max(kv.Version-1, 0)
		return n, n
	case kv.ModRevision <= c:
		return 0, 0
	default:
		return 1, 1 + max(0, min(kv.Version-2, kv.ModRevision-c-1))
	}
}
