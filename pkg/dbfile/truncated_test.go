package dbfile

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/regghost/regghost/internal/etcdtest"
)

// goodSnapshot is a snapshot of 2000 keys of 300 bytes (a file of a few
// hundred pages, its key bucket a branch over many leaves) and its newest
// meta.
func goodSnapshot(t *testing.T) ([]byte, boltMeta) {
	t.Helper()
	cli, ep := etcdtest.Start(t)
	for i := range 2000 {
		etcdtest.Put(t, cli, fmt.Sprintf("/registry/configmaps/a/c%04d", i), strings.Repeat("x", 300))
	}
	good, err := os.ReadFile(saveSnapshot(t, ep))
	if err != nil {
		t.Fatal(err)
	}
	m, ok := newestMeta(bytes.NewReader(good), int64(len(good)))
	if !ok || m.pageSize == 0 {
		t.Fatal("the snapshot has no valid meta page")
	}
	return good, m
}

// writeCopy writes data to a new file named name.
func writeCopy(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// oneLineNaming fails unless err is one line naming path (and want, when
// given).
func oneLineNaming(t *testing.T, what string, err error, path string, want ...string) {
	t.Helper()
	switch {
	case err == nil:
		t.Errorf("%s: no error", what)
		return
	case strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "goroutine"):
		t.Errorf("%s: not one line: %q", what, err)
	case !strings.Contains(err.Error(), path):
		t.Errorf("%s: %q does not name %s", what, err, path)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: %q does not say %q", what, err, w)
		}
	}
}

// TestTruncatedCopiesAreRefused: a copy of a db file cut short anywhere (a
// copy that ran out of disk) is refused by every way of opening it, before
// anything is mapped, in one line naming the file and saying how many bytes
// its meta page counts; a file too short for a meta page is not a
// database. The whole file, and its pages without the snapshot's trailing
// sha256, open.
func TestTruncatedCopiesAreRefused(t *testing.T) {
	t.Setenv("REGGHOST_INDEX_CACHE", "off")
	good, m := goodSnapshot(t)
	ps, pages := int(m.pageSize), int(m.pgid)
	if len(good) < pages*ps {
		t.Fatalf("the snapshot holds %d bytes, its meta counts %d pages of %d", len(good), pages, ps)
	}
	tests := []struct {
		name      string
		size      int
		truncated bool // else not a database at all
	}{
		{"half", len(good) / 2, true},
		{"one page short", (pages - 1) * ps, true},
		{"one byte short", pages*ps - 1, true},
		{"the two meta pages", 2 * ps, true},
		{"one meta page", ps, true},
		{"a few bytes", 100, true},
		{"fewer bytes than a meta", 10, false},
		{"empty", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeCopy(t, "x.db", good[:tt.size])
			zipped := filepath.Join(t.TempDir(), "etcd-snapshot-node-1-1733212345.zip")
			writeZip(t, zipped, map[string]string{"etcd-snapshot-node-1-1733212345": p})
			want := []string{"nothing was read"}
			if tt.truncated {
				want = append(want, fmt.Sprintf("%d pages of %d bytes", pages, ps), fmt.Sprintf("holds %d bytes", tt.size))
			} else {
				want = append(want, "not a readable etcd database")
			}
			open := map[string]func(string) error{
				"CheckSize": CheckSize,
				"OpenFile": func(p string) error {
					f, err := OpenFile(p)
					if err == nil {
						f.Close()
					}
					return err
				},
				"Open": func(p string) error {
					s, err := Open(p)
					if err == nil {
						s.Close()
					}
					return err
				},
				"OpenSnapshot": func(p string) error {
					s, _, err := OpenSnapshot(p)
					if err == nil {
						s.Close()
					}
					return err
				},
			}
			for name, fn := range open {
				err := fn(p)
				oneLineNaming(t, name, err, p, want...)
				if tt.truncated && !errors.Is(err, ErrTruncated) {
					t.Errorf("%s: %v is not ErrTruncated", name, err)
				}
			}
			_, _, err := OpenSnapshot(zipped)
			oneLineNaming(t, "OpenSnapshot of a zip", err, zipped, want...)
		})
	}
	for _, size := range []int{len(good), pages * ps} {
		p := writeCopy(t, "whole.db", good[:size])
		if err := CheckSize(p); err != nil {
			t.Errorf("%d bytes: %v", size, err)
		}
		s, err := Open(p)
		if err != nil {
			t.Fatalf("%d bytes: %v", size, err)
		}
		s.Close()
	}
}

// pointPast makes one child of the key bucket's first branch page above its
// leaves (reached from its root by first children) of a copy of good point
// at page to, past the file's pages, and returns the copy.
func pointPast(t *testing.T, good []byte, m boltMeta, child func(n int) int, to uint64) []byte {
	t.Helper()
	d := append([]byte{}, good...)
	ps := int(m.pageSize)
	e := binary.NativeEndian
	page := func(id uint64) []byte { return d[int(id)*ps : int(id+1)*ps] }
	// The root bucket: a leaf of the bucket names, each a bucket (flag 1)
	// whose value starts with its root page.
	root := page(m.root)
	if e.Uint16(root[8:])&0x02 == 0 {
		t.Skip("the root bucket is not one leaf page")
	}
	var keyRoot uint64
	for i := range int(e.Uint16(root[10:])) {
		el := root[pageHeaderSize+16*i:]
		pos, ksize := int(e.Uint32(el[4:])), int(e.Uint32(el[8:]))
		k := el[pos : pos+ksize]
		if e.Uint32(el)&1 != 0 && string(k) == "key" {
			keyRoot = e.Uint64(el[pos+ksize:])
		}
	}
	if keyRoot == 0 {
		t.Fatal("no key bucket of its own pages")
	}
	br := page(keyRoot)
	if e.Uint16(br[8:])&0x01 == 0 {
		t.Fatalf("the key bucket's root, page %d, is not a branch page", keyRoot)
	}
	for {
		first := page(e.Uint64(br[pageHeaderSize+8:]))
		if e.Uint16(first[8:])&0x01 == 0 {
			break
		}
		br = first
	}
	i := child(int(e.Uint16(br[10:])))
	e.PutUint64(br[pageHeaderSize+16*i+8:], to)
	return d
}

// shrunk opens the file at p with open and then cuts it to size bytes, as
// another process might while it is read.
func shrunk[T any](t *testing.T, p string, size int64, open func(string) (T, error)) T {
	t.Helper()
	v, err := open(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, size); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestFaultsOnTheMapAreErrors: a page the memory map covers but the file
// does not hold faults when it is read. Whether the file shrank after it
// was opened or a damaged branch page points past its end, every read gives
// one line naming the file and the page, on whatever goroutine it runs
// (the walkers of a walk, a caller's goroutine under Guard), never a crash.
func TestFaultsOnTheMapAreErrors(t *testing.T) {
	t.Setenv("REGGHOST_INDEX_CACHE", "off")
	ctx := context.Background()
	good, m := goodSnapshot(t)
	ps := int64(m.pageSize)
	// Two meta pages and nothing else: every other page faults.
	cut := 2 * ps
	pageOf := func(t *testing.T, err error) {
		t.Helper()
		if err != nil && !strings.Contains(err.Error(), "could not be read at page ") {
			t.Errorf("%q names no page", err)
		}
	}

	t.Run("file read after it shrank", func(t *testing.T) {
		for name, read := range map[string]func(*File) error{
			"Revisions": func(f *File) error {
				return f.Revisions(ctx, nil, func(Revision) error { return nil })
			},
			"RevisionSizes": func(f *File) error {
				return f.RevisionSizes(ctx, func([]byte, bool, int) error { return nil })
			},
			"Pages": func(f *File) error { _, err := f.Pages(); return err },
		} {
			p := writeCopy(t, "x.db", good)
			f := shrunk(t, p, cut, OpenFile)
			err := read(f)
			oneLineNaming(t, name, err, p)
			pageOf(t, err)
			f.Close()
		}
	})

	t.Run("key-values a caller reads after it shrank", func(t *testing.T) {
		p := writeCopy(t, "x.db", good)
		f, err := OpenFile(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var values [][]byte
		if err := f.Revisions(ctx, nil, func(r Revision) error { values = append(values, r.KV.Value); return nil }); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(p, cut); err != nil {
			t.Fatal(err)
		}
		done := make(chan error)
		go func() {
			var err error
			defer func() { done <- err }()
			defer f.Guard(&err)()
			n := 0
			for _, v := range values {
				n += bytes.Count(v, []byte("x"))
			}
		}()
		err = <-done
		oneLineNaming(t, "Guard", err, p)
		pageOf(t, err)
	})

	t.Run("store read after it shrank", func(t *testing.T) {
		for _, cache := range []string{"off", t.TempDir()} {
			t.Setenv("REGGHOST_INDEX_CACHE", cache)
			p := writeCopy(t, "x.db", good)
			if cache != "off" {
				// Open once to write the index: the store below reads
				// through it.
				s, err := Open(p)
				if err != nil {
					t.Fatal(err)
				}
				s.Close()
			}
			s := shrunk(t, p, cut, Open)
			if (s.idx != nil) != (cache != "off") {
				t.Fatalf("index used: %v, cache %s", s.idx != nil, cache)
			}
			other, err := Open(writeCopy(t, "other.db", good))
			if err != nil {
				t.Fatal(err)
			}
			err = s.Range(ctx, "\x00", "", false, func(kv *mvccpb.KeyValue) error { return nil })
			oneLineNaming(t, "Range", err, p)
			pageOf(t, err)
			_, err = s.Get(ctx, "/registry/configmaps/a/c1999")
			oneLineNaming(t, "Get", err, p)
			pageOf(t, err)
			err = Diff(ctx, other, s, DiffOptions{Values: true}, func(Change) error { return nil })
			oneLineNaming(t, "Diff", err, p)
			pageOf(t, err)
			// The shrunk file first: the fault is still its own, not the
			// other file's.
			err = Diff(ctx, s, other, DiffOptions{Values: true}, func(Change) error { return nil })
			oneLineNaming(t, "Diff, the shrunk file first", err, p)
			pageOf(t, err)
			s.Close()
			other.Close()
		}
	})

	t.Run("walk after it shrank", func(t *testing.T) {
		for _, size := range []int64{cut, int64(len(good)) / 4, int64(len(good)) / 2, int64(len(good)) * 3 / 4} {
			p := writeCopy(t, "x.db", good)
			f := shrunk(t, p, size, OpenFile)
			st := &Store{path: p, db: f.db, file: f, noIndex: true}
			if err := st.load(); err != nil {
				oneLineNaming(t, fmt.Sprintf("walk of %d bytes", size), err, p)
				pageOf(t, err)
			}
			st.Close()
		}
	})

	// A page the map covers past the file's end: reading it faults.
	to := uint64((int64(len(good))+int64(os.Getpagesize())-1)/ps + 1)
	if int64(to+1)*ps > int64(mapSize(int64(len(good)))) {
		t.Skipf("the map of %d bytes has no page past the file's end", len(good))
	}
	for name, child := range map[string]func(int) int{
		"first child past the file":  func(int) int { return 0 },
		"middle child past the file": func(n int) int { return n / 2 },
	} {
		t.Run(name, func(t *testing.T) {
			p := writeCopy(t, "x.db", pointPast(t, good, m, child, to))
			want := fmt.Sprintf("page %d ", to)
			_, err := Open(p)
			oneLineNaming(t, "Open", err, p, want)
			f, err := OpenFile(p)
			if err != nil {
				t.Fatal(err) // it reads the last revision only
			}
			defer f.Close()
			err = f.Revisions(ctx, nil, func(Revision) error { return nil })
			oneLineNaming(t, "Revisions", err, p, want)
			_, err = f.Pages()
			oneLineNaming(t, "Pages", err, p, want)
		})
	}
}
