// Package dbfile reads an etcd data file (a snapshot or member/snap/db)
// directly with bbolt, read-only, without starting etcd.
package dbfile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"unsafe"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/server/v3/storage/schema"
)

// Store is the latest revision of every live key in a db file. It
// implements etcdscan.Store. The key-values it hands out alias the file's
// memory map: they are valid until Close.
type Store struct {
	path string
	db   *bolt.DB
	txs  []*bolt.Tx
	rev  int64
	size int64
	// m resolves offsets in the db file's memory map; base is the file
	// offset of its anchor.
	m    mmap
	base int64
	// entries are the live keys, sorted, with their latest records, when
	// the file was walked; idx is the cached index otherwise.
	entries []entry
	idx     *index
	// indexed is closed once the index of a walked file is written.
	indexed chan struct{}
	// file is the opened file; noIndex keeps the index cache out (an
	// unzipped temporary copy).
	file    *File
	noIndex bool
}

// Info says what the file is.
func (s *Store) Info() Info { return s.file.Info() }

// File is the opened file, for reading its revisions (File.Revisions).
func (s *Store) File() *File { return s.file }

// Open opens path read-only and indexes its keys: OpenSnapshot without the
// file's Info.
func Open(path string) (*Store, error) {
	s, _, err := OpenSnapshot(path)
	return s, err
}

// OpenSnapshot opens an etcd db file read-only, through OpenFile (a plain
// file, or a zip-compressed k3s snapshot unzipped to a temporary file), and
// indexes its live keys: from the cached index of the file when there is one
// for it as it is now, else by walking every revision (and then caching the
// index; never for an unzipped copy, which is new each time). It returns
// what the file is beside it: every command reading a db file says so. A db
// that a running etcd holds locked, a file that is not a bbolt db, one
// shorter than its pages, and a damaged one all give an error; bbolt panics
// on some damage, and a page that cannot be read faults, which are turned
// into errors too.
func OpenSnapshot(path string) (*Store, Info, error) {
	f, err := OpenFile(path)
	if err != nil {
		return nil, Info{}, err
	}
	info := f.Info()
	st := &Store{path: info.DBPath, db: f.db, file: f, noIndex: info.Zipped}
	if err := st.load(); err != nil {
		// Close rolls back the read transactions first: closing the db
		// waits for them.
		st.Close()
		return nil, Info{}, f.damaged(err)
	}
	return st, info, nil
}

// load indexes the file's live keys. A fault on the map, or a panic of
// bbolt's, is its error.
func (s *Store) load() (err error) {
	defer s.file.guard(&err)()
	tx, err := s.db.Begin(false)
	if err != nil {
		return err
	}
	s.txs = []*bolt.Tx{tx}
	// An unzipped copy is removed as soon as it is open (see OpenFile): it
	// has no path to stat, and no index.
	var id identity
	if s.noIndex {
		s.size = tx.Size()
	} else if id, err = identityOf(s.path, tx.ID()); err != nil {
		return err
	} else {
		s.size = id.size
	}
	b := tx.Bucket(schema.Key.Name())
	if b == nil {
		return errors.New("no key bucket: not an etcd v3 database")
	}
	first, anchor := b.Cursor().First()
	if first == nil {
		return nil // an empty keyspace
	}
	if len(anchor) == 0 {
		return fmt.Errorf("revision %x holds no record", first)
	}
	s.m = mmap{anchor: &anchor[0]}
	s.base = int64(uintptr(unsafe.Pointer(s.m.anchor)) - s.db.Info().Data)
	if s.noIndex {
		entries, rev, txs, err := walk(s.file, tx, s.m)
		s.txs = append(s.txs, txs...)
		s.entries, s.rev = entries, rev
		return err
	}
	if ix := openIndex(s.path, id); ix != nil {
		s.idx, s.rev = ix, ix.hdr.Rev
		return nil
	}
	entries, rev, txs, err := walk(s.file, tx, s.m)
	s.txs = append(s.txs, txs...)
	if err != nil {
		return err
	}
	s.entries, s.rev = entries, rev
	// The index is written beside the work the file was opened for.
	s.indexed = make(chan struct{})
	go func() {
		defer close(s.indexed)
		_ = writeIndex(s.file, s.path, id, s.rev, s.m, s.base, s.entries)
	}()
	return nil
}

// Close releases the file; the key-values read from it go with it.
func (s *Store) Close() error {
	if s.indexed != nil {
		<-s.indexed
	}
	s.idx.close()
	rollback(s.txs)
	return s.file.Close()
}

// Revision implements etcdscan.Store: the newest revision in the file.
func (s *Store) Revision() int64 { return s.rev }

// Len is the number of live keys.
func (s *Store) Len() int {
	if s.idx != nil {
		return s.idx.len()
	}
	return len(s.entries)
}

// keyAt is the i-th live key.
func (s *Store) keyAt(i int) ([]byte, error) {
	if s.idx == nil {
		return s.m.key(s.entries[i]), nil
	}
	key, _, _, err := s.idx.at(i)
	return key, err
}

// recordAt decodes the i-th live key's latest record.
func (s *Store) recordAt(i int, keysOnly bool) (*mvccpb.KeyValue, error) {
	if s.idx == nil {
		return decodeRecord(s.m.rec(s.entries[i]), keysOnly)
	}
	key, off, n, err := s.idx.at(i)
	if err != nil {
		return nil, fmt.Errorf("%w (remove %s)", err, indexPath(s.path))
	}
	if off < 0 || off+int64(n) > s.size || s.m.anchor == nil {
		return nil, fmt.Errorf("%w: a record outside the file (remove %s)", errIndex, indexPath(s.path))
	}
	kv, err := decodeRecord(s.m.bytes(off-s.base, n), keysOnly)
	if err != nil || !bytes.Equal(kv.Key, key) {
		return nil, fmt.Errorf("%w: its record of %s does not hold it (remove %s)", errIndex, key, indexPath(s.path))
	}
	return kv, nil
}

// search returns the index of the first live key that is at least key.
func (s *Store) search(key string) int {
	kb := []byte(key)
	i, j := 0, s.Len()
	for i < j {
		h := int(uint(i+j) >> 1)
		k, err := s.keyAt(h)
		if err != nil || bytes.Compare(k, kb) < 0 {
			i = h + 1
		} else {
			j = h
		}
	}
	return i
}

// inRange reports whether the i-th key is below end ("" is no end).
func (s *Store) inRange(i int, end string) bool {
	if i >= s.Len() {
		return false
	}
	k, err := s.keyAt(i)
	return err == nil && (end == "" || string(k) < end)
}

// Range implements etcdscan.Store. It guards the calling goroutine (Guard)
// while it runs, fn included.
func (s *Store) Range(ctx context.Context, start, end string, keysOnly bool, fn func(*mvccpb.KeyValue) error) (err error) {
	defer s.Guard(&err)()
	for i := s.search(start); s.inRange(i, end); i++ {
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		kv, err := s.recordAt(i, keysOnly)
		if err != nil {
			return fmt.Errorf("read key %d: %w", i, err)
		}
		if err := fn(kv); err != nil {
			return err
		}
	}
	return nil
}

// First implements etcdscan.Store.
func (s *Store) First(ctx context.Context, start, end string) (_ *mvccpb.KeyValue, err error) {
	defer s.Guard(&err)()
	i := s.search(start)
	if !s.inRange(i, end) {
		return nil, nil
	}
	k, err := s.keyAt(i)
	if err != nil {
		return nil, err
	}
	return &mvccpb.KeyValue{Key: k}, nil
}

// Get implements etcdscan.Store.
func (s *Store) Get(ctx context.Context, key string) (_ *mvccpb.KeyValue, err error) {
	defer s.Guard(&err)()
	i := s.search(key)
	if i == s.Len() {
		return nil, nil
	}
	if k, err := s.keyAt(i); err != nil || string(k) != key {
		return nil, err
	}
	kv, err := s.recordAt(i, false)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	return kv, nil
}

// Count implements etcdscan.Counter.
func (s *Store) Count(ctx context.Context, start, end string) (_ int64, err error) {
	defer s.Guard(&err)()
	i := s.search(start)
	j := s.Len()
	if end != "" {
		j = s.search(end)
	}
	return int64(max(0, j-i)), nil
}

func oneLine(err error) string {
	line, _, _ := strings.Cut(err.Error(), "\n")
	return line
}
