package etcdscan

import (
	"encoding/json"
	"fmt"

	"github.com/regghost/regghost/pkg/spill"
)

// DefaultSpillAfter is how many findings a scan keeps in memory. Past it
// they move to a spill file in the temporary directory, so that a scan's
// memory does not grow with its findings: a finding held in memory costs
// about 1.4 KB, so the findings of a scan stay under 30 MiB.
const DefaultSpillAfter = 20000

// spillBucket is the spill file's bucket of findings, by key.
const spillBucket = "findings"

// findingStore holds a scan's findings by key: in memory up to limit of
// them, then in a spill file.
type findingStore struct {
	mem   []Finding
	index map[string]int
	file  *spill.File
	n     int
	limit int
	dir   string
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
	raw, err := st.file.Get(spillBucket, key)
	if err != nil || raw == nil {
		return nil, err
	}
	return decodeFinding(key, raw)
}

// put stores f, new or changed.
func (st *findingStore) put(f *Finding) error {
	if st.file != nil {
		if old, err := st.file.Get(spillBucket, f.Key); err != nil {
			return err
		} else if old == nil {
			st.n++
		}
		return st.write(f)
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
	st.file = file
	for i := range st.mem {
		if err := st.write(&st.mem[i]); err != nil {
			return err
		}
	}
	st.mem, st.index = nil, nil
	return nil
}

func (st *findingStore) write(f *Finding) error {
	raw, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("spill finding %s: %w", f.Key, err)
	}
	return st.file.Put(spillBucket, f.Key, raw)
}

// each calls fn with every finding: in the order they were found when in
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
	return st.file.Each(spillBucket, func(key string, raw []byte) error {
		f, err := decodeFinding(key, raw)
		if err != nil {
			return err
		}
		if err := fn(f); err != nil {
			return err
		}
		return st.write(f)
	})
}

// read calls fn with every finding, read only (no write back).
func (st *findingStore) read(fn func(*Finding) error) error {
	if st.file == nil {
		return st.each(fn)
	}
	return st.file.Each(spillBucket, func(key string, raw []byte) error {
		f, err := decodeFinding(key, raw)
		if err != nil {
			return err
		}
		return fn(f)
	})
}

func (st *findingStore) close() error {
	if st == nil {
		return nil
	}
	return st.file.Close()
}

func decodeFinding(key string, raw []byte) (*Finding, error) {
	var f Finding
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("read spilled finding %s: %w", key, err)
	}
	return &f, nil
}
