package dbfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
)

// bbolt's file format (go.etcd.io/bbolt/internal/common): every page starts
// with a 16-byte header, and pages 0 and 1 hold a meta each, written in the
// host's byte order, the newer transaction alternating between them.
const (
	boltMagic      = 0xED0CDAED
	boltVersion    = 2
	pageHeaderSize = 16
	// metaSize is a meta's magic, version, page size, flags, root bucket
	// (page and sequence), freelist page, page count, txid and checksum.
	metaSize = 4*4 + 2*8 + 4*8
	// metaSummed is the part of a meta its checksum covers (all but it).
	metaSummed = metaSize - 8
	// noFreelist is the freelist page of a file written without one.
	noFreelist = ^uint64(0)
)

// ErrTruncated says a db file is shorter than the pages its meta page
// counts: a copy cut short (a disk that ran out of room, an interrupted
// transfer). Nothing of such a file is mapped.
var ErrTruncated = errors.New("truncated")

// boltMeta is the meta page bbolt reads a file by.
type boltMeta struct {
	pageSize uint32
	root     uint64
	freelist uint64
	// pgid is the high-water mark: the file's pages are [0, pgid).
	pgid uint64
	txid uint64
}

// parseMeta reads the meta of the page starting b; ok when it has bbolt's
// magic, version and checksum.
func parseMeta(b []byte) (m boltMeta, ok bool) {
	if len(b) < pageHeaderSize+metaSize {
		return boltMeta{}, false
	}
	b = b[pageHeaderSize : pageHeaderSize+metaSize]
	e := binary.NativeEndian
	h := fnv.New64a()
	_, _ = h.Write(b[:metaSummed])
	if e.Uint32(b[0:]) != boltMagic || e.Uint32(b[4:]) != boltVersion || e.Uint64(b[metaSummed:]) != h.Sum64() {
		return boltMeta{}, false
	}
	return boltMeta{pageSize: e.Uint32(b[8:]), root: e.Uint64(b[16:]), freelist: e.Uint64(b[32:]),
		pgid: e.Uint64(b[40:]), txid: e.Uint64(b[48:])}, true
}

// readMetaAt reads the meta of the page at off of r; ok when it is valid.
func readMetaAt(r io.ReaderAt, off int64) (boltMeta, bool) {
	buf := make([]byte, pageHeaderSize+metaSize)
	if n, _ := r.ReadAt(buf, off); n < len(buf) {
		return boltMeta{}, false
	}
	return parseMeta(buf)
}

// newestMeta reads a bbolt file's two meta pages with plain reads and
// returns the one bbolt would read it by: the valid one with the highest
// txid. Like bbolt, it takes the page size from meta 0, else looks for meta
// 1 at each page size bbolt allows.
func newestMeta(r io.ReaderAt, size int64) (boltMeta, bool) {
	m0, ok0 := readMetaAt(r, 0)
	pageSize := int64(m0.pageSize)
	if !ok0 {
		for i := range 15 {
			pos := int64(1024) << i
			if pos >= size-1024 {
				break
			}
			if m, ok := readMetaAt(r, pos); ok {
				pageSize = int64(m.pageSize)
				break
			}
		}
	}
	var m1 boltMeta
	ok1 := false
	if pageSize > 0 {
		m1, ok1 = readMetaAt(r, pageSize)
	}
	switch {
	case ok0 && ok1 && m1.txid > m0.txid, !ok0 && ok1:
		return m1, true
	case ok0:
		return m0, true
	}
	return boltMeta{}, false
}

// CheckSize reads the bbolt meta pages of path, a plain db file (not a
// zip), with plain reads, nothing mapped, and refuses a file that cannot hold the pages its newest valid
// meta counts (ErrTruncated), one without a valid meta page, and one whose
// meta puts its root or freelist page past its pages. A file that passes
// holds every page bbolt may read, so mapping it cannot fault on a page
// past its end. Every db file is checked so before it is opened; a caller
// that hands a db file to bbolt itself (etcdutl snapshot status) can check
// it first.
func CheckSize(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open db file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("open db file: %w", err)
	}
	return checkSize(path, f, st.Size())
}

// checkSize is CheckSize of r, size bytes long, named path.
func checkSize(path string, r io.ReaderAt, size int64) error {
	m, ok := newestMeta(r, size)
	switch {
	case !ok && size == 0:
		return fmt.Errorf("db file %s is not a readable etcd database: it is empty (a copy cut short?); nothing was read", path)
	case !ok && size < pageHeaderSize+metaSize:
		return fmt.Errorf("db file %s is not a readable etcd database: it holds %d bytes, too few for a bbolt meta page (a copy cut short?); nothing was read", path, size)
	case !ok:
		return fmt.Errorf("db file %s is not a readable etcd database: neither of its meta pages is a valid bbolt meta (magic, version, checksum); nothing was read", path)
	case m.pageSize < pageHeaderSize+metaSize:
		return fmt.Errorf("db file %s is damaged: its meta page (txid %d) says pages of %d bytes; nothing was read", path, m.txid, m.pageSize)
	case m.root < 2 || m.root >= m.pgid:
		return fmt.Errorf("db file %s is damaged: its meta page (txid %d) puts its root at page %d, of %d pages; nothing was read", path, m.txid, m.root, m.pgid)
	case m.freelist != noFreelist && (m.freelist < 2 || m.freelist >= m.pgid):
		return fmt.Errorf("db file %s is damaged: its meta page (txid %d) puts its freelist at page %d, of %d pages; nothing was read", path, m.txid, m.freelist, m.pgid)
	}
	ps := uint64(m.pageSize)
	if m.pgid > uint64(size)/ps {
		need := "more"
		if m.pgid <= (1<<63-1)/ps {
			need = fmt.Sprint(m.pgid * ps)
		}
		return fmt.Errorf("db file %s is %w: its meta page says %d pages of %d bytes (%s bytes), the file holds %d bytes (a copy cut short?); nothing was read",
			path, ErrTruncated, m.pgid, m.pageSize, need, size)
	}
	return nil
}
