package dbfile

import (
	"context"
	"fmt"

	"go.etcd.io/etcd/server/v3/storage/mvcc"
	"google.golang.org/protobuf/encoding/protowire"
)

// RevisionSizes walks every revision in the file once, in revision order,
// like Revisions, and calls fn with each one's key (aliasing the file's
// memory map, valid until the file is closed), whether it is a delete, and
// its value's length: what accounting for the file's bytes needs, read
// without decoding the rest of the record.
func (f *File) RevisionSizes(ctx context.Context, fn func(key []byte, tombstone bool, valueLen int) error) error {
	return f.eachRevision(ctx, func(k, v []byte) error {
		key, valueLen, err := recordSizes(v)
		if err != nil {
			return f.damagedAt(k, err)
		}
		return fn(key, mvcc.IsTombstone(k), valueLen)
	})
}

// recordSizes returns the key of an mvccpb.KeyValue record (aliasing rec)
// and its value's length, skipping the other fields.
func recordSizes(rec []byte) (key []byte, valueLen int, err error) {
	for len(rec) > 0 {
		num, typ, n := protowire.ConsumeTag(rec)
		if n < 0 {
			return nil, 0, errRecord
		}
		rec = rec[n:]
		if typ == protowire.BytesType && (num == fieldKey || num == fieldValue) {
			b, n := protowire.ConsumeBytes(rec)
			if n < 0 {
				return nil, 0, errRecord
			}
			if num == fieldKey {
				key = b
			} else {
				valueLen = len(b)
			}
			rec = rec[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, rec)
		if n < 0 {
			return nil, 0, errRecord
		}
		rec = rec[n:]
	}
	if key == nil {
		return nil, 0, fmt.Errorf("%w: no key", errRecord)
	}
	return key, valueLen, nil
}
