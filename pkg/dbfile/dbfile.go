// Package dbfile reads an etcd data file (a snapshot or member/snap/db)
// directly with bbolt, read-only, without starting etcd.
package dbfile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/server/v3/storage/mvcc"
	"go.etcd.io/etcd/server/v3/storage/schema"
	"google.golang.org/protobuf/proto"
)

// Store is the latest revision of every live key in a db file. It
// implements etcdscan.Store.
type Store struct {
	db  *bolt.DB
	rev int64
	// keys are the live keys, sorted; revs[i] is the bucket key of keys[i]'s
	// latest revision.
	keys []string
	revs [][]byte
}

// Open opens path read-only and indexes its keys. A db that a running etcd
// holds locked, a file that is not a bbolt db, and a damaged one all give an
// error; bbolt panics on some damage, which is turned into an error too.
func Open(path string) (s *Store, err error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("open db file: %w", err)
	}
	db, err := bolt.Open(path, 0o400, &bolt.Options{ReadOnly: true, Timeout: 2 * time.Second})
	if err != nil {
		if errors.Is(err, bolt.ErrTimeout) {
			return nil, fmt.Errorf("db file %s is locked, probably by a running etcd: take a snapshot (regghost snapshot save) or copy the file", path)
		}
		return nil, fmt.Errorf("db file %s is not a readable etcd database: %w", path, err)
	}
	defer func() {
		if r := recover(); r != nil {
			db.Close()
			s, err = nil, fmt.Errorf("db file %s is damaged: %v", path, r)
		}
	}()
	s = &Store{db: db}
	if err := s.index(); err != nil {
		db.Close()
		return nil, fmt.Errorf("db file %s: %w", path, err)
	}
	return s, nil
}

// Close releases the file.
func (s *Store) Close() error { return s.db.Close() }

func (s *Store) index() error {
	latest := map[string][]byte{}
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(schema.Key.Name())
		if b == nil {
			return errors.New("no key bucket: not an etcd v3 database")
		}
		return b.ForEach(func(k, v []byte) error {
			rev := mvcc.BytesToRev(k)
			if rev.Main > s.rev {
				s.rev = rev.Main
			}
			var kv mvccpb.KeyValue
			if err := proto.Unmarshal(v, &kv); err != nil {
				return fmt.Errorf("revision %d: %w", rev.Main, err)
			}
			if mvcc.IsTombstone(k) {
				delete(latest, string(kv.Key))
				return nil
			}
			latest[string(kv.Key)] = append([]byte(nil), k...)
			return nil
		})
	})
	if err != nil {
		return err
	}
	s.keys = make([]string, 0, len(latest))
	for k := range latest {
		s.keys = append(s.keys, k)
	}
	sort.Strings(s.keys)
	s.revs = make([][]byte, len(s.keys))
	for i, k := range s.keys {
		s.revs[i] = latest[k]
	}
	return nil
}

// Revision implements etcdscan.Store: the newest revision in the file.
func (s *Store) Revision() int64 { return s.rev }

// Len is the number of live keys.
func (s *Store) Len() int { return len(s.keys) }

// Range implements etcdscan.Store.
func (s *Store) Range(ctx context.Context, start, end string, keysOnly bool, fn func(*mvccpb.KeyValue) error) error {
	i := sort.SearchStrings(s.keys, start)
	return s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(schema.Key.Name())
		for ; i < len(s.keys) && (end == "" || s.keys[i] < end); i++ {
			if err := ctx.Err(); err != nil {
				return err
			}
			kv, err := s.read(b, i, keysOnly)
			if err != nil {
				return err
			}
			if err := fn(kv); err != nil {
				return err
			}
		}
		return nil
	})
}

func (s *Store) read(b *bolt.Bucket, i int, keysOnly bool) (*mvccpb.KeyValue, error) {
	v := b.Get(s.revs[i])
	var kv mvccpb.KeyValue
	if err := proto.Unmarshal(v, &kv); err != nil {
		return nil, fmt.Errorf("read %s: %w", s.keys[i], err)
	}
	if keysOnly {
		kv.Value = nil
	}
	return &kv, nil
}

// First implements etcdscan.Store.
func (s *Store) First(ctx context.Context, start, end string) (*mvccpb.KeyValue, error) {
	i := sort.SearchStrings(s.keys, start)
	if i == len(s.keys) || (end != "" && s.keys[i] >= end) {
		return nil, nil
	}
	return &mvccpb.KeyValue{Key: []byte(s.keys[i])}, nil
}

// Get implements etcdscan.Store.
func (s *Store) Get(ctx context.Context, key string) (*mvccpb.KeyValue, error) {
	i := sort.SearchStrings(s.keys, key)
	if i == len(s.keys) || s.keys[i] != key {
		return nil, nil
	}
	var kv *mvccpb.KeyValue
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		kv, err = s.read(tx.Bucket(schema.Key.Name()), i, false)
		return err
	})
	return kv, err
}

// Keys returns the live keys starting with prefix, sorted.
func (s *Store) Keys(prefix string) []string {
	i := sort.SearchStrings(s.keys, prefix)
	j := i
	for j < len(s.keys) && strings.HasPrefix(s.keys[j], prefix) {
		j++
	}
	return s.keys[i:j]
}
