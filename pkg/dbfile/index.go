package dbfile

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// An etcd db file keeps its keys by revision: finding one key, or the keys
// of one namespace, means reading every revision. The first time regghost
// reads a file it writes what that walk found, each live key and where its
// latest record sits in the file, sorted by key, to an index file in the
// user's cache directory. Later reads of the same file (same path, size,
// change time, inode and bbolt transaction) binary-search that index from
// its memory map and read only the records they return, each checked to
// hold the key the index says.

// indexMagic starts an index file.
const indexMagic = "RGHIDX02"

// indexHeader follows the magic.
type indexHeader struct {
	DBSize  uint64
	ModTime int64
	Inode   uint64
	TxID    uint64
	Rev     int64
	Count   uint64
	// BlobSize is the size of the blob after the offsets.
	BlobSize uint64
}

const headerSize = 8 + 7*8

// index is a mapped index file: Count offsets into the blob, whose entries
// are a uint32 key length, the key, the record's uint64 offset in the db
// file and its uint32 length.
type index struct {
	data    []byte
	hdr     indexHeader
	offsets []byte
	blob    []byte
}

// identity says which file, in which state, an index was made from.
type identity struct {
	size    int64
	modTime int64
	inode   uint64
	txid    uint64
}

func identityOf(path string, txid int) (identity, error) {
	st, err := os.Stat(path)
	if err != nil {
		return identity{}, err
	}
	id := identity{size: st.Size(), modTime: st.ModTime().UnixNano(), txid: uint64(txid)}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		id.inode = sys.Ino
		id.modTime = max(id.modTime, sys.Ctim.Nano())
	}
	return id, nil
}

// indexPath is where the index of path lives, or "" when there is no cache
// directory. REGGHOST_INDEX_CACHE names another directory, or "off".
func indexPath(path string) string {
	dir := os.Getenv("REGGHOST_INDEX_CACHE")
	if dir == "off" {
		return ""
	}
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(cache, "regghost", "dbindex")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(dir, hex.EncodeToString(sum[:12])+".idx")
}

// openIndex maps the index of path if there is one for the file as it is
// now; nil when there is none or it does not match.
func openIndex(path string, id identity) *index {
	ip := indexPath(path)
	if ip == "" {
		return nil
	}
	f, err := os.Open(ip)
	if err != nil {
		return nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() < headerSize {
		return nil
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil
	}
	ix := &index{data: data}
	if string(data[:8]) != indexMagic || binary.Read(bytes.NewReader(data[8:headerSize]), binary.LittleEndian, &ix.hdr) != nil {
		ix.close()
		return nil
	}
	h := ix.hdr
	if h.DBSize != uint64(id.size) || h.ModTime != id.modTime || h.Inode != id.inode || h.TxID != id.txid ||
		h.Count > uint64(len(data)) || uint64(len(data)) != headerSize+8*h.Count+h.BlobSize {
		ix.close()
		return nil
	}
	ix.offsets = data[headerSize : headerSize+8*h.Count]
	ix.blob = data[headerSize+8*h.Count:]
	return ix
}

func (ix *index) close() {
	if ix != nil && ix.data != nil {
		_ = syscall.Munmap(ix.data)
		ix.data = nil
	}
}

func (ix *index) len() int { return int(ix.hdr.Count) }

var errIndex = errors.New("the cached index is damaged")

// at returns entry i's key and its record's offset and length in the db file.
func (ix *index) at(i int) (key []byte, off int64, n uint32, err error) {
	p := binary.LittleEndian.Uint64(ix.offsets[8*i:])
	b := ix.blob
	if p+4 > uint64(len(b)) {
		return nil, 0, 0, errIndex
	}
	kl := uint64(binary.LittleEndian.Uint32(b[p:]))
	if p+4+kl+12 > uint64(len(b)) {
		return nil, 0, 0, errIndex
	}
	key = b[p+4 : p+4+kl]
	q := p + 4 + kl
	return key, int64(binary.LittleEndian.Uint64(b[q:])), binary.LittleEndian.Uint32(b[q+8:]), nil
}

// writeIndex writes the index of the walked entries atomically (a .part
// file renamed). A failure leaves no index behind; it only makes the next
// read of the file walk it again. It reads the keys from f's map, under
// f's guard: it runs on a goroutine of its own.
func writeIndex(f *File, path string, id identity, rev int64, m mmap, base int64, entries []entry) error {
	ip := indexPath(path)
	if ip == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(ip), 0o700); err != nil {
		return err
	}
	part := fmt.Sprintf("%s.%d.part", ip, os.Getpid())
	out, err := os.OpenFile(part, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(out, 1<<20)
	err = func() (err error) {
		defer f.guard(&err)()
		return encodeIndex(w, id, rev, m, base, entries)
	}()
	if err == nil {
		err = w.Flush()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(part, ip)
	}
	if err != nil {
		os.Remove(part)
	}
	return err
}

// blobEntrySize is the size of an entry in the index's blob.
func blobEntrySize(e entry) uint64 { return 4 + uint64(e.keyLen) + 12 }

func encodeIndex(w io.Writer, id identity, rev int64, m mmap, base int64, entries []entry) error {
	var blobSize uint64
	for _, e := range entries {
		blobSize += blobEntrySize(e)
	}
	h := indexHeader{DBSize: uint64(id.size), ModTime: id.modTime, Inode: id.inode, TxID: id.txid, Rev: rev,
		Count: uint64(len(entries)), BlobSize: blobSize}
	if _, err := io.WriteString(w, indexMagic); err != nil {
		return err
	}
	if err := binary.Write(w, binary.LittleEndian, h); err != nil {
		return err
	}
	var b [12]byte
	var off uint64
	for _, e := range entries {
		binary.LittleEndian.PutUint64(b[:8], off)
		if _, err := w.Write(b[:8]); err != nil {
			return err
		}
		off += blobEntrySize(e)
	}
	for _, e := range entries {
		binary.LittleEndian.PutUint32(b[:4], e.keyLen)
		if _, err := w.Write(b[:4]); err != nil {
			return err
		}
		if _, err := w.Write(m.key(e)); err != nil {
			return err
		}
		binary.LittleEndian.PutUint64(b[:8], uint64(base+e.recOff))
		binary.LittleEndian.PutUint32(b[8:12], e.recLen)
		if _, err := w.Write(b[:12]); err != nil {
			return err
		}
	}
	return nil
}
