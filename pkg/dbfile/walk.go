package dbfile

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"unsafe"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/server/v3/storage/mvcc"
	"go.etcd.io/etcd/server/v3/storage/schema"
)

// entry is one live key with its latest record (an mvccpb.KeyValue), both
// in the file's memory map. They are kept as offsets from an anchor in the
// map, not as slices: an index of a million keys then holds no pointers,
// which the garbage collector would otherwise scan again and again.
type entry struct {
	keyOff, recOff int64
	keyLen, recLen uint32
}

// tombLen marks a revision that deletes its key (recLen is never this long:
// etcd's requests are far smaller).
const tombLen = ^uint32(0)

// mmap resolves entries against the file's memory map.
type mmap struct{ anchor *byte }

func (m mmap) off(b []byte) int64 {
	return int64(uintptr(unsafe.Pointer(unsafe.SliceData(b))) - uintptr(unsafe.Pointer(m.anchor)))
}

func (m mmap) bytes(off int64, n uint32) []byte {
	return unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(m.anchor), off)), n)
}

func (m mmap) key(e entry) []byte { return m.bytes(e.keyOff, e.keyLen) }
func (m mmap) rec(e entry) []byte { return m.bytes(e.recOff, e.recLen) }

// maxWalkers bounds the goroutines of a walk.
const maxWalkers = 4

// chunk is how many revisions a walker sorts at a time.
const chunk = 1 << 16

// walk reads etcd's key bucket, which holds every revision of every key in
// revision order, and returns the latest record of each live key, sorted by
// key, with the newest revision in the file. It reads a few bytes of each
// record (its key), never its value, and keeps 24 bytes per revision: the
// keys and records stay in the memory map. The bucket is split by revision
// into one part per core, walked at once; each part is sorted by key in
// chunks keeping each key's newest revision, and the chunks and parts are
// merged with later ones winning. tx, the caller's, walks the first part;
// the transactions walk opens for the others are returned, open: the
// entries point into their memory, resolved by m. Every walker, and the
// caller's goroutine, reads the map under f's guard: a fault or a panic of
// bbolt's is the walk's error, and then no transaction is left open.
func walk(f *File, tx *bolt.Tx, m mmap) (_ []entry, _ int64, _ []*bolt.Tx, err error) {
	txs := []*bolt.Tx{tx}
	defer func() {
		if err != nil {
			rollback(txs[1:])
		}
	}()
	defer f.guard(&err)()
	c := tx.Bucket(schema.Key.Name()).Cursor()
	first, _ := c.First()
	last, _ := c.Last()
	if first == nil {
		return nil, 0, nil, nil
	}
	if len(first) < 17 || len(last) < 17 {
		return nil, 0, nil, fmt.Errorf("key bucket holds %x, not a revision", first)
	}
	lo, hi := mvcc.BytesToRev(first).Main, mvcc.BytesToRev(last).Main
	n := min(runtime.GOMAXPROCS(0), maxWalkers)
	if hi-lo < 1024 {
		n = 1
	}
	// Part i covers revisions [bounds[i], bounds[i+1]); nil is open.
	bounds := make([][]byte, n+1)
	for i := 1; i < n; i++ {
		bounds[i] = revKey(lo + (hi-lo)*int64(i)/int64(n))
	}
	for i := 1; i < n; i++ {
		t, err := f.db.Begin(false)
		if err != nil {
			return nil, 0, nil, err
		}
		txs = append(txs, t)
	}
	parts := make([][]entry, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// bbolt panics on some damaged pages, and a fault on the
			// map panics under the guard: a walker turns either into
			// its error.
			defer f.guard(&errs[i])()
			parts[i], errs[i] = walkPart(f, m, txs[i].Bucket(schema.Key.Name()), bounds[i], bounds[i+1])
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, 0, nil, err
		}
	}
	live := mergeAll(m, parts)
	// Deletes were kept through the merges so that a delete in a later part
	// hides the key of an earlier one; now they go.
	out := live[:0]
	for _, e := range live {
		if e.recLen != tombLen {
			out = append(out, e)
		}
	}
	return slices.Clip(out), hi, txs[1:], nil
}

// walkPart reads the revisions in [from, to) and returns, sorted by key,
// each key's newest revision among them, deletes included.
func walkPart(f *File, m mmap, b *bolt.Bucket, from, to []byte) ([]entry, error) {
	var sorted [][]entry
	cur := make([]entry, 0, chunk)
	c := b.Cursor()
	var k, v []byte
	if from == nil {
		k, v = c.First()
	} else {
		k, v = c.Seek(from)
	}
	for ; k != nil && (to == nil || bytes.Compare(k, to) < 0); k, v = c.Next() {
		// A record the map holds past the file's pages (a damaged page)
		// is never handed out.
		if !f.span.fits(k, f.size) {
			return nil, errOutside
		}
		if !f.span.fits(v, f.size) {
			return nil, fmt.Errorf("revision %x: %w", k, errOutside)
		}
		key, err := recordKey(v)
		if err != nil {
			return nil, fmt.Errorf("revision %x: %w", k, err)
		}
		if len(v) >= int(tombLen) {
			return nil, fmt.Errorf("revision %x: a record of %d bytes", k, len(v))
		}
		e := entry{keyOff: m.off(key), keyLen: uint32(len(key)), recOff: m.off(v), recLen: uint32(len(v))}
		if mvcc.IsTombstone(k) {
			e.recLen = tombLen
		}
		cur = append(cur, e)
		if len(cur) == chunk {
			sorted = append(sorted, newestByKey(m, cur))
			cur = make([]entry, 0, chunk)
		}
	}
	if len(cur) > 0 {
		sorted = append(sorted, newestByKey(m, cur))
	}
	return mergeAll(m, sorted), nil
}

// newestByKey sorts revisions (in revision order) by key and keeps each
// key's newest, in place.
func newestByKey(m mmap, revs []entry) []entry {
	// Stable: the revisions of one key stay in revision order, the newest last.
	slices.SortStableFunc(revs, func(a, b entry) int { return bytes.Compare(m.key(a), m.key(b)) })
	out := revs[:0]
	for i := range revs {
		if i+1 < len(revs) && bytes.Equal(m.key(revs[i+1]), m.key(revs[i])) {
			continue
		}
		out = append(out, revs[i])
	}
	return out
}

// mergeAll merges key-sorted runs given in revision order; on the same key
// the later run wins.
func mergeAll(m mmap, runs [][]entry) []entry {
	if len(runs) == 0 {
		return nil
	}
	for len(runs) > 1 {
		var next [][]entry
		for i := 0; i < len(runs); i += 2 {
			if i+1 == len(runs) {
				next = append(next, runs[i])
				continue
			}
			next = append(next, merge(m, runs[i], runs[i+1]))
		}
		runs = next
	}
	return runs[0]
}

// merge merges two key-sorted runs; on the same key, b (later revisions) wins.
func merge(m mmap, a, b []entry) []entry {
	out := make([]entry, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch c := bytes.Compare(m.key(a[i]), m.key(b[j])); {
		case c < 0:
			out = append(out, a[i])
			i++
		case c > 0:
			out = append(out, b[j])
			j++
		default:
			out = append(out, b[j])
			i++
			j++
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}

// revKey is the key bucket's key of revision main, sub 0.
func revKey(main int64) []byte {
	k := make([]byte, 17)
	binary.BigEndian.PutUint64(k, uint64(main))
	k[8] = '_'
	return k
}

func rollback(txs []*bolt.Tx) {
	for _, t := range txs {
		_ = t.Rollback()
	}
}
