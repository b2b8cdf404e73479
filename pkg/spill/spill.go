// Package spill keeps records too many to hold in memory: sorted buckets of
// keys and values in a bbolt file of the temporary directory. The file is
// unlinked as soon as it is open, so nothing is left behind however the
// process ends, and nobody else can open it.
package spill

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/regghost/regghost/pkg/diskroom"
)

// roomOf reads the free space of a spill file's disk (tests replace it).
var roomOf = diskroom.Of

// growth is what a spill file may add between two looks at its disk's
// free space: a batch of writes and the file's growth in bbolt's steps.
const growth = 64 << 20

// File is one spill file. It is used from one goroutine.
type File struct {
	db  *bolt.DB
	dir string
	// pending are writes not yet committed, by bucket and key.
	pending  map[string]map[string][]byte
	npending int
	// iterating is set while Each runs: its writes stay pending until its
	// next read, so that the entries it copied out can be overlaid with them.
	iterating int
}

// ErrClosed is what a closed File answers.
var ErrClosed = errors.New("spill file used after it was closed")

// MaxKey is the longest key a bucket takes (bbolt's limit).
const MaxKey = bolt.MaxKeySize

// writeBatch is how many writes one transaction commits; readBatch how many
// entries Each copies out of one read transaction.
const (
	writeBatch = 1024
	readBatch  = 256
)

// Open creates a spill file in dir (the temporary directory when empty).
// It refuses to start, and a File refuses to grow, when the disk is close to
// full: a tenth of it and 1 GiB stay free for kubelet and etcd.
func Open(dir string) (*File, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	if err := checkRoom(dir); err != nil {
		return nil, err
	}
	d, err := os.MkdirTemp(dir, "regghost-spill-")
	if err != nil {
		return nil, fmt.Errorf("spill to %s: %w", dir, err)
	}
	defer os.RemoveAll(d)
	db, err := bolt.Open(filepath.Join(d, "spill.db"), 0o600, &bolt.Options{
		NoSync: true, NoGrowSync: true, NoFreelistSync: true, FreelistType: bolt.FreelistMapType,
	})
	if err != nil {
		return nil, fmt.Errorf("spill to %s: %w", dir, err)
	}
	return &File{db: db, dir: dir, pending: map[string]map[string][]byte{}}, nil
}

// Put sets key to value in bucket (value is copied).
func (f *File) Put(bucket, key string, value []byte) error {
	if f.db == nil {
		return ErrClosed
	}
	if len(key) == 0 || len(key) > MaxKey {
		return fmt.Errorf("spill file in %s: a key of %d bytes (1 to %d)", f.dir, len(key), MaxKey)
	}
	b := f.pending[bucket]
	if b == nil {
		b = map[string][]byte{}
		f.pending[bucket] = b
	}
	if _, ok := b[key]; !ok {
		f.npending++
	}
	b[key] = bytes.Clone(value)
	if f.npending >= writeBatch && f.iterating == 0 {
		return f.flush()
	}
	return nil
}

// Get returns the value of key in bucket, or nil when there is none.
func (f *File) Get(bucket, key string) ([]byte, error) {
	if f.db == nil {
		return nil, ErrClosed
	}
	if v, ok := f.pending[bucket][key]; ok {
		return v, nil
	}
	var out []byte
	err := f.db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket([]byte(bucket)); b != nil {
			out = bytes.Clone(b.Get([]byte(key)))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read spill file in %s: %w", f.dir, err)
	}
	return out, nil
}

// Each calls fn for every entry of bucket in key order. fn may Put: no
// transaction is open while it runs, and a new value it writes for a key
// of the bucket is what that key's turn sees. A key fn adds may not be
// seen (no caller adds keys while iterating), nor may fn call Each.
func (f *File) Each(bucket string, fn func(key string, value []byte) error) error {
	if f.db == nil {
		return ErrClosed
	}
	type entry struct{ k, v []byte }
	var after []byte
	started := false
	f.iterating++
	defer func() { f.iterating-- }()
	for {
		if err := f.flush(); err != nil {
			return err
		}
		var got []entry
		err := f.db.View(func(tx *bolt.Tx) error {
			b := tx.Bucket([]byte(bucket))
			if b == nil {
				return nil
			}
			c := b.Cursor()
			k, v := c.First()
			if started {
				k, v = c.Seek(after)
				if k != nil && bytes.Equal(k, after) {
					k, v = c.Next()
				}
			}
			for ; k != nil && len(got) < readBatch; k, v = c.Next() {
				got = append(got, entry{bytes.Clone(k), bytes.Clone(v)})
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("read spill file in %s: %w", f.dir, err)
		}
		for _, e := range got {
			v := e.v
			if w, ok := f.pending[bucket][string(e.k)]; ok {
				v = w
			}
			if err := fn(string(e.k), v); err != nil {
				return err
			}
		}
		if len(got) < readBatch {
			return nil
		}
		after, started = got[len(got)-1].k, true
	}
}

// Drop removes bucket and everything in it; its pages are reused.
func (f *File) Drop(bucket string) error {
	if f.db == nil {
		return ErrClosed
	}
	if err := f.flush(); err != nil {
		return err
	}
	err := f.db.Update(func(tx *bolt.Tx) error {
		if tx.Bucket([]byte(bucket)) == nil {
			return nil
		}
		return tx.DeleteBucket([]byte(bucket))
	})
	if err != nil {
		return fmt.Errorf("write spill file in %s: %w", f.dir, err)
	}
	return nil
}

// flush commits the pending writes.
func (f *File) flush() error {
	if f.db == nil {
		return ErrClosed
	}
	if f.npending == 0 {
		return nil
	}
	if err := checkRoom(f.dir); err != nil {
		return err
	}
	err := f.db.Update(func(tx *bolt.Tx) error {
		for name, kvs := range f.pending {
			b, err := tx.CreateBucketIfNotExists([]byte(name))
			if err != nil {
				return err
			}
			// Written mostly in key order: full pages, not bbolt's half
			// full ones, which suit random inserts.
			b.FillPercent = 0.95
			// In key order: bbolt appends sorted writes without splitting pages.
			for _, k := range slices.Sorted(maps.Keys(kvs)) {
				if err := b.Put([]byte(k), kvs[k]); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("write spill file in %s: %w", f.dir, err)
	}
	f.pending, f.npending = map[string]map[string][]byte{}, 0
	return nil
}

// checkRoom refuses to write to dir when its disk has no room for what a
// spill file adds before the next look.
func checkRoom(dir string) error {
	room, err := roomOf(dir)
	if err != nil {
		return fmt.Errorf("spill to %s: %w", dir, err)
	}
	if !room.Fits(growth) {
		return fmt.Errorf("spill to %s: %s; set TMPDIR to a larger disk", dir, room)
	}
	return nil
}

// Close releases the file; its space goes back to the disk.
func (f *File) Close() error {
	if f == nil || f.db == nil {
		return nil
	}
	err := f.db.Close()
	f.db = nil
	return err
}
