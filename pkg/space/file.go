package space

import (
	"container/heap"
	"context"

	"github.com/regghost/regghost/pkg/dbfile"
)

// fileWalk is what one pass over every revision of a db file counted.
type fileWalk struct {
	// history counts the revisions that are not a key's current value,
	// by resource and namespace (only the history fields).
	history *tally
	// index finds a key's record in stats.
	index *idTable
	stats []keyStat
	// most keeps the keys with the most revisions; each key's place in it
	// is in its record.
	most topHeap
	// compact is the file's compacted revision.
	compact int64
}

// keyStat is what the walk keeps of each key: 24 bytes, no pointer.
type keyStat struct {
	revs, tombs uint32
	bytes       uint64
	// heapAt is the key's place in the most-revisions heap, plus one
	// (0: not in it).
	heapAt int32
	// last is the size of the key's newest revision so far, deleted when
	// a delete (at the end: the key does not exist now).
	last uint32
}

// deleted marks keyStat.last of a key whose newest revision is a delete.
const deleted = ^uint32(0)

// exists reports whether the key exists now: its newest revision is a put.
func (s keyStat) exists() bool { return s.last != deleted }

// WalkFile counts every revision held in the db file f, once each, in
// revision order: puts and deletes, by resource and namespace and per key.
// It may run while the scan of the same file reads its values (Wrap);
// Report joins the two. a must have been made with Options.File. keys is
// how many keys the file holds now (dbfile.Store.Len), to size the walk's
// records once.
func (a *Account) WalkFile(ctx context.Context, f *dbfile.File, keys int) error {
	hint := keys + keys/8
	w := &fileWalk{history: newTally(a.o.Prefix), index: newIDTable(hint), stats: make([]keyStat, 0, hint),
		most: topHeap{n: max(a.o.Top, 0)}, compact: f.Info().CompactRevision}
	w.most.moved = func(id int32, at int) { w.stats[id].heapAt = int32(at + 1) }
	err := f.RevisionSizes(ctx, func(key []byte, tombstone bool, valueLen int) error {
		size := int64(len(key))
		if !tombstone {
			size += int64(valueLen)
		}
		id, added := w.index.getOrAdd(a.hash(key), int32(len(w.stats)))
		seen := !added
		if added {
			w.stats = append(w.stats, keyStat{})
		}
		s := &w.stats[id]
		// Revisions come in order: a key's newer revision makes its last
		// put history, and a delete is history from the start. A key
		// written once (most) costs no lookup of its groups.
		if seen && s.exists() {
			w.history.add(key, Usage{HistoryRevisions: 1, HistoryBytes: int64(s.last)})
		}
		s.revs++
		s.bytes += uint64(size)
		s.last = uint32(min(size, int64(deleted-1)))
		if tombstone {
			w.history.add(key, Usage{HistoryRevisions: 1, Tombstones: 1, HistoryBytes: size})
			s.tombs++
			s.last = deleted
		}
		w.rank(id, key)
		return nil
	})
	if err != nil {
		return err
	}
	a.mu.Lock()
	a.walk = w
	a.mu.Unlock()
	return nil
}

// rank keeps the key's place among those with the most revisions: its
// count has just grown by one.
func (w *fileWalk) rank(id int32, key []byte) {
	s := &w.stats[id]
	score := int64(s.revs)
	h := &w.most
	switch {
	case s.heapAt > 0:
		at := int(s.heapAt - 1)
		h.items[at].score = score
		heap.Fix(h, at)
	case !h.wants(score):
	case len(h.items) < h.n:
		heap.Push(h, topItem{score: score, key: string(key), id: id})
	default:
		w.stats[h.items[0].id].heapAt = 0
		h.items[0] = topItem{score: score, key: string(key), id: id}
		s.heapAt = 1
		heap.Fix(h, 0)
	}
}
