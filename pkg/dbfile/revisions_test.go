package dbfile

import (
	"archive/zip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/regghost/regghost/internal/etcdtest"
)

// TestRevisionsHoldEveryRevisionSinceCompaction: a key written, deleted and
// written again around a compaction reads back from the snapshot as every
// revision since the compaction (and its newest before it), tombstones
// included, in revision order; the file says its revision and compaction.
func TestRevisionsHoldEveryRevisionSinceCompaction(t *testing.T) {
	t.Setenv("REGGHOST_INDEX_CACHE", "off")
	cli, ep := etcdtest.Start(t)
	ctx := context.Background()
	do := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	rev := func() int64 {
		r, err := cli.Get(ctx, "x")
		do(err)
		return r.Header.Revision
	}
	put := func(k, v string) int64 { _, err := cli.Put(ctx, k, v); do(err); return rev() }
	del := func(k string) int64 { _, err := cli.Delete(ctx, k); do(err); return rev() }
	const a = "/registry/configmaps/ns/a"
	put(a, "1")
	kept := put(a, "2")
	put("/registry/configmaps/ns/b", "x")
	compacted := del("/registry/configmaps/ns/b")
	_, err := cli.Compact(ctx, compacted)
	do(err)
	want := []string{fmt.Sprintf("%d put 2", kept)}
	want = append(want, fmt.Sprintf("%d put 3", put(a, "3")))
	want = append(want, fmt.Sprintf("%d delete", del(a)))
	want = append(want, fmt.Sprintf("%d put 4", put(a, "4")))
	for range 2000 {
		put("/registry/pods/other/p", strings.Repeat("v", 100))
	}
	want = append(want, fmt.Sprintf("%d delete", del(a)))
	last := put("/registry/pods/other/q", "x")
	path := saveSnapshot(t, ep)

	for _, name := range []string{"plain", "etcd-snapshot-node-1-1733212345", "etcd-snapshot-node-1-1733212345.zip"} {
		t.Run(name, func(t *testing.T) {
			p := path
			if name != "plain" {
				p = filepath.Join(t.TempDir(), name)
				if strings.HasSuffix(name, ".zip") {
					writeZip(t, p, map[string]string{strings.TrimSuffix(name, ".zip"): path})
				} else {
					data, err := os.ReadFile(path)
					do(err)
					do(os.WriteFile(p, data, 0o600))
				}
			}
			s, info, err := OpenSnapshot(p)
			do(err)
			// The copy is gone while the file is still read: a command
			// killed now leaves nothing behind.
			if _, err := os.Stat(info.DBPath); info.Zipped && !os.IsNotExist(err) {
				t.Errorf("unzipped copy %s is on disk while open: %v", info.DBPath, err)
			}
			if info.Revision != last || info.CompactRevision != compacted || s.Revision() != last {
				t.Errorf("info %+v, store revision %d; want revision %d compacted at %d", info, s.Revision(), last, compacted)
			}
			if name == "plain" {
				if info.TimeSource != TimeFromModTime {
					t.Errorf("time from %s", info.TimeSource)
				}
			} else if info.TimeSource != TimeFromK3sName || !info.Time.Equal(time.Unix(1733212345, 0)) {
				t.Errorf("time %s from %s", info.Time, info.TimeSource)
			}
			if info.Zipped != strings.HasSuffix(name, ".zip") || !strings.Contains(info.String(), fmt.Sprintf("revision %d, compacted at %d", last, compacted)) {
				t.Errorf("info %s", info)
			}
			var got []string
			do(s.File().Revisions(ctx, func(k []byte) bool { return string(k) == a }, func(r Revision) error {
				if r.Tombstone {
					got = append(got, fmt.Sprintf("%d delete", r.Main))
				} else {
					got = append(got, fmt.Sprintf("%d put %s", r.KV.ModRevision, r.KV.Value))
				}
				return nil
			}))
			if strings.Join(got, ", ") != strings.Join(want, ", ") {
				t.Errorf("revisions\n %s\nwant\n %s", strings.Join(got, ", "), strings.Join(want, ", "))
			}
			if n, _ := s.Count(ctx, "/registry/", "/registry0"); n != 2 {
				t.Errorf("%d live keys, want 2", n)
			}
			do(s.Close())
			if _, err := os.Stat(info.DBPath); info.Zipped && !os.IsNotExist(err) {
				t.Errorf("unzipped copy %s left behind: %v", info.DBPath, err)
			}
		})
	}
}

// TestZipNotOneSnapshot: a zip of two files, and one of a file that is not a
// db, are refused in one line.
func TestZipNotOneSnapshot(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk")
	if err := os.WriteFile(junk, []byte("not a db"), 0o600); err != nil {
		t.Fatal(err)
	}
	two := filepath.Join(dir, "two.zip")
	writeZip(t, two, map[string]string{"a": junk, "b": junk})
	one := filepath.Join(dir, "one.zip")
	writeZip(t, one, map[string]string{"a": junk})
	for p, want := range map[string]string{two: "holds 2 files, not one snapshot", one: "not a readable etcd database"} {
		_, _, err := OpenSnapshot(p)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want %q", p, err, want)
		}
	}
}

// writeZip writes a zip holding each name with the content of its file.
func writeZip(t *testing.T, path string, files map[string]string) {
	t.Helper()
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(out)
	for name, src := range files {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		in, err := os.Open(src)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(w, in); err != nil {
			t.Fatal(err)
		}
		in.Close()
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
