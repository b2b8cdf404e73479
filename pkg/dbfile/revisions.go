package dbfile

import (
	"context"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/server/v3/storage/mvcc"
	"go.etcd.io/etcd/server/v3/storage/schema"
)

// Revision is one revision of one key as the file's key bucket holds it.
type Revision struct {
	// Main and Sub are the revision (Main is etcd's revision, Sub the
	// operation within its transaction).
	Main, Sub int64
	// Tombstone is set for a delete: KV then holds the key alone.
	Tombstone bool
	// KV is the record; its Key and Value alias the file's memory map and
	// are valid until the file is closed.
	KV *mvccpb.KeyValue
}

// Revisions walks every revision in the file once, in revision order, and
// calls fn for each whose key match accepts (every one when match is nil):
// puts and deletes (tombstones), since the file's last compaction (before
// it, each key's newest revision only). It reads the key of every record
// and nothing else of those match refuses, so finding the history of one key
// costs about one pass over the keys, whatever the values weigh.
func (f *File) Revisions(ctx context.Context, match func(key []byte) bool, fn func(Revision) error) error {
	return f.eachRevision(ctx, func(k, v []byte) error {
		key, err := recordKey(v)
		if err != nil {
			return f.damagedAt(k, err)
		}
		if match != nil && !match(key) {
			return nil
		}
		rev := mvcc.BytesToRev(k)
		r := Revision{Main: rev.Main, Sub: rev.Sub, Tombstone: mvcc.IsTombstone(k)}
		if r.KV, err = decodeRecord(v, r.Tombstone); err != nil {
			return f.damagedAt(k, err)
		}
		if r.Tombstone {
			// etcd writes a delete as the key alone; its revision is the
			// delete's.
			r.KV.ModRevision = rev.Main
		}
		return fn(r)
	})
}

// damagedAt says that the record at bucket key k does not read.
func (f *File) damagedAt(k []byte, err error) error {
	return fmt.Errorf("db file %s is damaged: revision %x: %w", f.info.Path, k, err)
}

// eachRevision walks the file's key bucket once, in revision order, and
// calls read with each revision's bucket key and record (both aliasing the
// file's memory map), stopping at read's first error. A damaged page
// (bbolt panics) or bucket key is the file's damage.
func (f *File) eachRevision(ctx context.Context, read func(k, v []byte) error) (err error) {
	tx, err := f.db.Begin(false)
	if err != nil {
		return fmt.Errorf("read %s: %w", f.info.Path, err)
	}
	defer func() { _ = tx.Rollback() }()
	// bbolt panics on some damaged pages; a fault on the map panics too.
	defer f.guard(&err)()
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
		if !f.span.fits(k, f.size) {
			return fmt.Errorf("db file %s is damaged: %w", f.info.Path, errOutside)
		}
		if !f.span.fits(v, f.size) {
			return f.damagedAt(k, errOutside)
		}
		if err := read(k, v); err != nil {
			return err
		}
	}
	return nil
}
