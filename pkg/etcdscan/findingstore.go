package etcdscan

import (
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/regghost/regghost/pkg/spill"
)

// DefaultSpillAfter is how many findings a scan keeps in memory. Past it
// they move to a spill file in the temporary directory, so that a scan's
// memory does not grow with its findings: a finding held in memory costs
// about 1.4 KB, so the findings of a scan stay under 30 MiB.
const DefaultSpillAfter = 20000

// The spill file's buckets: the findings by key while the scan runs, then,
// once their verdicts are settled, the report's order (ghosts first, each
// group by key).
const (
	findingsBucket = "findings"
	reportBucket   = "report"
)

// findingStore holds a scan's findings by key: in memory up to limit of
// them, then in a spill file.
type findingStore struct {
	mem   []Finding
	index map[string]int
	file  *spill.File
	dict  *sharedStrings
	// settled is set once the findings are in the report's order.
	settled bool
	n       int
	limit   int
	dir     string
	buf     []byte
	// last is the greatest key in the spill file: a key past it needs no
	// lookup (a walk of the whole keyspace finds keys in order, so most do).
	last string
}

// errSettled refuses a finding recorded after the report was put in order.
var errSettled = errors.New("a finding recorded after the verdicts settled")

// longKey is how long an etcd key may be to be its spill file key as it is.
const longKey = spill.MaxKey - 2 - sha256.Size

// fileKey is the spill file's key of an etcd key: the key itself, or, for
// one longer than bbolt takes (etcd allows keys up to its request size),
// its start and its sha256. Such keys are listed by their start; the
// finding holds the whole key.
func fileKey(key string) string {
	if len(key) <= longKey {
		return key
	}
	sum := sha256.Sum256([]byte(key))
	return key[:longKey] + string(sum[:])
}

func newFindingStore(limit int, dir string) *findingStore {
	return &findingStore{index: map[string]int{}, limit: limit, dir: dir}
}

// spilled reports whether the findings are on disk.
func (st *findingStore) spilled() bool { return st.file != nil }

// get returns the finding of key, or nil. In memory it is the finding
// itself; from the spill file a copy, stored again by put.
func (st *findingStore) get(key string) (*Finding, error) {
	if st.file == nil {
		if i, ok := st.index[key]; ok {
			return &st.mem[i], nil
		}
		return nil, nil
	}
	if key > st.last {
		return nil, nil
	}
	raw, err := st.file.Get(findingsBucket, fileKey(key))
	if err != nil || raw == nil {
		return nil, err
	}
	return decodeFinding(key, raw, st.dict)
}

// put stores f, new or changed.
func (st *findingStore) put(f *Finding) error {
	if st.settled {
		return errSettled
	}
	if st.file != nil {
		if f.Key > st.last {
			st.n++
			st.last = f.Key
		} else if old, err := st.file.Get(findingsBucket, fileKey(f.Key)); err != nil {
			return err
		} else if old == nil {
			st.n++
		}
		return st.write(findingsBucket, fileKey(f.Key), f)
	}
	if i, ok := st.index[f.Key]; ok {
		if &st.mem[i] != f {
			st.mem[i] = *f
		}
		return nil
	}
	st.index[f.Key] = len(st.mem)
	st.mem = append(st.mem, *f)
	st.n++
	if st.n > st.limit {
		return st.spill()
	}
	return nil
}

// spill moves every finding to a spill file.
func (st *findingStore) spill() error {
	file, err := spill.Open(st.dir)
	if err != nil {
		return fmt.Errorf("more than %d findings: %w", st.limit, err)
	}
	st.file, st.dict = file, newSharedStrings()
	for i := range st.mem {
		if err := st.write(findingsBucket, fileKey(st.mem[i].Key), &st.mem[i]); err != nil {
			return err
		}
		st.last = max(st.last, st.mem[i].Key)
	}
	st.mem, st.index = nil, nil
	return nil
}

func (st *findingStore) write(bucket, key string, f *Finding) error {
	st.buf = encodeFinding(st.buf[:0], f, st.dict)
	return st.file.Put(bucket, key, st.buf)
}

// each calls fn with every finding, in the order they were found when in
// memory, in key order from the spill file. A change fn makes is kept.
func (st *findingStore) each(fn func(*Finding) error) error {
	if st.file == nil {
		for i := range st.mem {
			if err := fn(&st.mem[i]); err != nil {
				return err
			}
		}
		return nil
	}
	return st.decoded(findingsBucket, func(key string, f *Finding) error {
		if err := fn(f); err != nil {
			return err
		}
		return st.write(findingsBucket, key, f)
	})
}

// settle calls fn with every finding for the last time, then puts them in
// the report's order: ghosts first, each group by key. No finding may be
// recorded or changed after it.
func (st *findingStore) settle(fn func(*Finding)) error {
	if st.file == nil {
		err := st.each(func(f *Finding) error { fn(f); return nil })
		st.settled = true
		return err
	}
	err := st.decoded(findingsBucket, func(key string, f *Finding) error {
		fn(f)
		order := "1"
		if f.Ghost {
			order = "0"
		}
		return st.write(reportBucket, order+key, f) // key is a file key: room for order
	})
	if err != nil {
		return err
	}
	st.settled = true
	return st.file.Drop(findingsBucket)
}

// read calls fn with every settled finding in the report's order, read
// only: what fn is given is valid during the call.
func (st *findingStore) read(fn func(*Finding) error) error {
	if !st.settled {
		return fmt.Errorf("findings read before their verdicts settled")
	}
	return st.decoded(reportBucket, func(_ string, f *Finding) error { return fn(f) })
}

// decoded calls fn with every finding of a bucket of the spill file, in
// key order, with its key in the bucket.
func (st *findingStore) decoded(bucket string, fn func(key string, f *Finding) error) error {
	return st.file.Each(bucket, func(key string, raw []byte) error {
		name := key
		if bucket == reportBucket {
			name = key[1:] // the order
		}
		f, err := decodeFinding(name, raw, st.dict)
		if err != nil {
			return err
		}
		return fn(key, f)
	})
}

func (st *findingStore) close() error {
	if st == nil {
		return nil
	}
	return st.file.Close()
}
