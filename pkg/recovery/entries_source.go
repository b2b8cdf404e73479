package recovery

import (
	"context"
	"sort"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/regghost/regghost/pkg/backup"
)

// EntriesSource is a Source over keys held in memory, in key order: a
// logical snapshot (kine's, see snapshot.SaveLogical) read whole.
type EntriesSource struct {
	rev int64
	kvs []*mvccpb.KeyValue
}

// NewEntriesSource serves entries as the keyspace at revision rev.
func NewEntriesSource(rev int64, entries []backup.Entry) *EntriesSource {
	s := &EntriesSource{rev: rev, kvs: make([]*mvccpb.KeyValue, len(entries))}
	for i, e := range entries {
		s.kvs[i] = &mvccpb.KeyValue{Key: []byte(e.Key), Value: e.Value, CreateRevision: e.CreateRevision, ModRevision: e.ModRevision, Version: e.Version, Lease: e.Lease}
	}
	sort.Slice(s.kvs, func(i, j int) bool { return string(s.kvs[i].Key) < string(s.kvs[j].Key) })
	return s
}

// Revision implements Source.
func (s *EntriesSource) Revision() int64 { return s.rev }

// Range implements Source.
func (s *EntriesSource) Range(ctx context.Context, start, end string, keysOnly bool, fn func(*mvccpb.KeyValue) error) error {
	i := sort.Search(len(s.kvs), func(i int) bool { return string(s.kvs[i].Key) >= start })
	for ; i < len(s.kvs) && string(s.kvs[i].Key) < end; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(s.kvs[i]); err != nil {
			return err
		}
	}
	return nil
}

// Get implements Source.
func (s *EntriesSource) Get(ctx context.Context, key string) (*mvccpb.KeyValue, error) {
	i := sort.Search(len(s.kvs), func(i int) bool { return string(s.kvs[i].Key) >= key })
	if i < len(s.kvs) && string(s.kvs[i].Key) == key {
		return s.kvs[i], nil
	}
	return nil, nil
}
