package dbfile

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// PageUse is how a db file uses its pages.
type PageUse struct {
	// PageSize is bbolt's page size.
	PageSize int64
	// Size is the file's size as etcd counts it (its dbSize): every page
	// up to the highest one allocated.
	Size int64
	// InUse is the pages reachable from the file's buckets, its two meta
	// pages and the root page of its buckets. The rest are free pages
	// (the freelist's own pages among them): what a defragmentation
	// gives back.
	InUse int64
}

// Pages reads the file's use of its pages: one walk of every bucket's
// branch and leaf pages (their headers, not their keys).
func (f *File) Pages() (u PageUse, err error) {
	tx, err := f.db.Begin(false)
	if err != nil {
		return PageUse{}, fmt.Errorf("read %s: %w", f.info.Path, err)
	}
	defer func() { _ = tx.Rollback() }()
	// bbolt panics on some damaged pages; a fault on the map panics too.
	defer f.guard(&err)()
	u.PageSize = int64(f.db.Info().PageSize)
	u.Size = tx.Size()
	// Two meta pages and the page of the bucket names.
	pages := int64(3)
	err = tx.ForEach(func(_ []byte, b *bolt.Bucket) error {
		s := b.Stats()
		pages += int64(s.BranchPageN + s.BranchOverflowN + s.LeafPageN + s.LeafOverflowN)
		return nil
	})
	if err != nil {
		return PageUse{}, fmt.Errorf("read %s: %w", f.info.Path, err)
	}
	u.InUse = min(pages*u.PageSize, u.Size)
	return u, nil
}
