package dbfile

import (
	"context"
	"fmt"

	"go.etcd.io/etcd/server/v3/storage/mvcc"
	"go.etcd.io/etcd/server/v3/storage/schema"
	"google.golang.org/protobuf/encoding/protowire"
)

// RevisionSizes walks every revision in the file once, in revision order,
// like Revisions, and calls fn with each one's key (aliasing the file's
// memory map, valid until the file is closed), whether it is a delete, and
// its value's length: what accounting for the file's bytes needs, read
// without decoding the rest of the record.
func (f *File) RevisionSizes(ctx context.Context, fn func(key []byte, tombstone bool, valueLen int) error) (err error) {
	tx, err := f.db.Begin(false)
	if err != nil {
		return fmt.Errorf("read %s: %w", f.info.Path, err)
	}
	defer func() { _ = tx.Rollback() }()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("db file %s is damaged: %v", f.info.Path, r)
		}
	}()
	b := tx.Bucket(schema.Key.Name())
	if b == nil {
		return fmt.Errorf("db file %s has no key bucket: not an etcd v3 database", f.info.Path)
	}
	c := b.Cursor()
	n := 0
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if n++; n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if len(k) < 17 {
			return fmt.Errorf("db file %s is damaged: key bucket holds %x, not a revision", f.info.Path, k)
		}
		key, valueLen, err := recordSizes(v)
		if err != nil {
			return fmt.Errorf("db file %s is damaged: revision %x: %w", f.info.Path, k, err)
		}
		if err := fn(key, mvcc.IsTombstone(k), valueLen); err != nil {
			return err
		}
	}
	return nil
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
