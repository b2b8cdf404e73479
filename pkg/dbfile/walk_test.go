package dbfile

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/snapshot"
	"go.uber.org/zap"

	"github.com/regghost/regghost/internal/etcdtest"
)

// saveSnapshot writes a snapshot of the embedded etcd at ep to a new file.
func saveSnapshot(t *testing.T, ep string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "snap.db")
	if _, err := snapshot.SaveWithVersion(context.Background(), zap.NewNop(), clientv3.Config{Endpoints: []string{ep}}, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// live reads every key of the running etcd.
func live(t *testing.T, cli *clientv3.Client) map[string]*mvccpb.KeyValue {
	t.Helper()
	resp, err := cli.Get(context.Background(), "\x00", clientv3.WithFromKey())
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]*mvccpb.KeyValue{}
	for _, kv := range resp.Kvs {
		m[string(kv.Key)] = kv
	}
	return m
}

// fromFile reads every key of the db file.
func fromFile(t *testing.T, s *Store) map[string]*mvccpb.KeyValue {
	t.Helper()
	m := map[string]*mvccpb.KeyValue{}
	var last string
	err := s.Range(context.Background(), "\x00", "", false, func(kv *mvccpb.KeyValue) error {
		if string(kv.Key) <= last && last != "" {
			return fmt.Errorf("%s after %s: not in key order", kv.Key, last)
		}
		last = string(kv.Key)
		m[string(kv.Key)] = &mvccpb.KeyValue{Key: []byte(string(kv.Key)), Value: []byte(string(kv.Value)),
			CreateRevision: kv.CreateRevision, ModRevision: kv.ModRevision, Version: kv.Version, Lease: kv.Lease}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func sameKeyspace(t *testing.T, what string, want, got map[string]*mvccpb.KeyValue) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d keys, want %d", what, len(got), len(want))
	}
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			t.Errorf("%s: %s missing", what, k)
		case string(g.Value) != string(w.Value) || g.ModRevision != w.ModRevision || g.CreateRevision != w.CreateRevision || g.Version != w.Version:
			t.Errorf("%s: %s = %q rev %d/%d v%d, want %q rev %d/%d v%d", what, k, g.Value, g.CreateRevision, g.ModRevision, g.Version,
				w.Value, w.CreateRevision, w.ModRevision, w.Version)
		}
	}
}

// TestWalkFindsTheLatestRevision: a keyspace with many revisions of one key,
// keys deleted, deleted and created again, deleted in a transaction with
// others, compacted, and enough revisions for the walk to split them among
// walkers, reads back from its snapshot exactly as etcd serves it: first by
// walking the file, then from the cached index.
func TestWalkFindsTheLatestRevision(t *testing.T) {
	t.Setenv("REGGHOST_INDEX_CACHE", t.TempDir())
	cli, ep := etcdtest.Start(t)
	ctx := context.Background()
	rnd := rand.New(rand.NewSource(1))
	put := func(k, v string) {
		if _, err := cli.Put(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3000 {
		put(fmt.Sprintf("/registry/pods/ns%d/p%d", rnd.Intn(20), rnd.Intn(400)), fmt.Sprintf("v%d", i))
		if i%7 == 0 {
			if _, err := cli.Delete(ctx, fmt.Sprintf("/registry/pods/ns%d/p%d", rnd.Intn(20), rnd.Intn(400))); err != nil {
				t.Fatal(err)
			}
		}
		if i == 1500 {
			resp, err := cli.Get(ctx, "x")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cli.Compact(ctx, resp.Header.Revision); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range 50 {
		put("/registry/configmaps/hot/one", fmt.Sprintf("version %d", i))
	}
	put("/registry/secrets/a/back", "old")
	if _, err := cli.Delete(ctx, "/registry/secrets/a/back"); err != nil {
		t.Fatal(err)
	}
	put("/registry/secrets/a/back", "new")
	// A transaction writing and deleting several keys at one revision.
	if _, err := cli.Txn(ctx).Then(clientv3.OpPut("/registry/x/a", "1"), clientv3.OpDelete("/registry/configmaps/hot/one"), clientv3.OpPut("/registry/x/b", "2")).Commit(); err != nil {
		t.Fatal(err)
	}
	want := live(t, cli)
	path := saveSnapshot(t, ep)
	for _, pass := range []string{"walked", "from the index"} {
		s, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if (s.idx != nil) != (pass == "from the index") {
			t.Fatalf("%s: index used: %v", pass, s.idx != nil)
		}
		sameKeyspace(t, pass, want, fromFile(t, s))
		if kv, err := s.Get(ctx, "/registry/configmaps/hot/one"); err != nil || kv != nil {
			t.Errorf("%s: a key deleted in a transaction is visible: %v %v", pass, kv, err)
		}
		if kv, err := s.Get(ctx, "/registry/secrets/a/back"); err != nil || kv == nil || string(kv.Value) != "new" {
			t.Errorf("%s: a key created again: %v %v", pass, kv, err)
		}
		if n, _ := s.Count(ctx, "/registry/pods/ns1/", "/registry/pods/ns10"); n == 0 {
			t.Errorf("%s: count of ns1: 0", pass)
		}
		s.Close()
	}
}

// TestIndexIsOnlyUsedForTheSameFile: a file changed since its index was
// written is walked again, and an index whose records do not hold its keys
// is an error naming the index file, never a wrong answer.
func TestIndexIsOnlyUsedForTheSameFile(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("REGGHOST_INDEX_CACHE", cache)
	cli, ep := etcdtest.Start(t)
	for i := range 20 {
		if _, err := cli.Put(context.Background(), fmt.Sprintf("/registry/pods/a/p%02d", i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	path := saveSnapshot(t, ep)
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	// Touched: another change time, so the index no longer matches.
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(path); err != nil || s.idx != nil {
		t.Fatalf("a changed file was read from its old index: %v", err)
	}
	s.Close()
	if s, err = Open(path); err != nil || s.idx == nil {
		t.Fatalf("no index after a walk: %v", err)
	}
	s.Close()
	// Damage the index's record offsets.
	files, _ := filepath.Glob(filepath.Join(cache, "*.idx"))
	if len(files) != 1 {
		t.Fatalf("index files: %v", files)
	}
	data, _ := os.ReadFile(files[0])
	for i := len(data) - 12; i < len(data)-4; i++ {
		data[i] ^= 0x55
	}
	if err := os.WriteFile(files[0], data, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.Range(context.Background(), "/", "", false, func(*mvccpb.KeyValue) error { return nil })
	if err == nil || !strings.Contains(err.Error(), files[0]) {
		t.Errorf("a damaged index: %v", err)
	}
}

// TestDamagedFiles: a truncated file, overwritten pages and a wrong magic
// each give one line and no panic.
func TestDamagedFiles(t *testing.T) {
	t.Setenv("REGGHOST_INDEX_CACHE", "off")
	cli, ep := etcdtest.Start(t)
	for i := range 2000 {
		if _, err := cli.Put(context.Background(), fmt.Sprintf("/registry/configmaps/a/c%04d", i), strings.Repeat("x", 300)); err != nil {
			t.Fatal(err)
		}
	}
	good, err := os.ReadFile(saveSnapshot(t, ep))
	if err != nil {
		t.Fatal(err)
	}
	overwrite := func(from, n int) []byte {
		d := append([]byte{}, good...)
		for i := from; i < from+n && i < len(d); i++ {
			d[i] = byte(i * 7)
		}
		return d
	}
	cases := map[string][]byte{
		"truncated":          good[:len(good)/2],
		"truncated header":   good[:100],
		"wrong magic":        overwrite(16, 8),
		"both meta pages":    overwrite(0, 8192),
		"a leaf page":        overwrite(len(good)/2, 4096),
		"pages near the end": overwrite(len(good)-3*4096, 2*4096),
		"empty":              nil,
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "x.db")
			if err := os.WriteFile(p, data, 0o600); err != nil {
				t.Fatal(err)
			}
			s, err := Open(p)
			if err == nil {
				// Damage the open did not meet must come out when reading.
				err = s.Range(context.Background(), "\x00", "", false, func(*mvccpb.KeyValue) error { return nil })
				s.Close()
			}
			if err == nil {
				return // damage in pages the keyspace does not use
			}
			if strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "goroutine") {
				t.Errorf("not one line: %q", err)
			}
		})
	}
}

// TestDiffInterleaved: keys added, removed and changed between two files,
// interleaved in key order, are each reported once, in key order, with the
// values' hashes, and the bytes only when asked.
func TestDiffInterleaved(t *testing.T) {
	t.Setenv("REGGHOST_INDEX_CACHE", t.TempDir())
	cli, ep := etcdtest.Start(t)
	ctx := context.Background()
	for i := range 30 {
		if _, err := cli.Put(ctx, fmt.Sprintf("/registry/k%02d", i), fmt.Sprintf("v%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	a := saveSnapshot(t, ep)
	want := map[string]string{}
	for i := 0; i < 30; i += 3 {
		k := fmt.Sprintf("/registry/k%02d", i)
		if _, err := cli.Delete(ctx, k); err != nil {
			t.Fatal(err)
		}
		want[k] = "removed"
	}
	for i := 1; i < 30; i += 3 {
		k := fmt.Sprintf("/registry/k%02d", i)
		if _, err := cli.Put(ctx, k, "new"); err != nil {
			t.Fatal(err)
		}
		want[k] = "changed"
		k = fmt.Sprintf("/registry/k%02d-added", i)
		if _, err := cli.Put(ctx, k, "x"); err != nil {
			t.Fatal(err)
		}
		want[k] = "added"
	}
	// Written again with the same bytes: not a change.
	if _, err := cli.Put(ctx, "/registry/k02", "v2"); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, "/outside", "x"); err != nil {
		t.Fatal(err)
	}
	b := saveSnapshot(t, ep)
	sa, err := Open(a)
	if err != nil {
		t.Fatal(err)
	}
	defer sa.Close()
	sb, err := Open(b)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	for _, values := range []bool{false, true} {
		var got []Change
		if err := Diff(ctx, sa, sb, DiffOptions{Prefix: "/registry/", Values: values}, func(c Change) error { got = append(got, c); return nil }); err != nil {
			t.Fatal(err)
		}
		if !sort.SliceIsSorted(got, func(i, j int) bool { return got[i].Key < got[j].Key }) || len(got) != len(want) {
			t.Fatalf("changes %+v, want %v", got, want)
		}
		for _, c := range got {
			if want[c.Key] != c.Kind {
				t.Errorf("%s: %s, want %s", c.Key, c.Kind, want[c.Key])
			}
			if c.Kind == "changed" && (c.HashA == "" || c.HashB == "" || c.HashA == c.HashB) {
				t.Errorf("%s: hashes %q %q", c.Key, c.HashA, c.HashB)
			}
			if (c.ValueA != nil || c.ValueB != nil) != values {
				t.Errorf("%s: values given: %v, asked: %v", c.Key, c.ValueA != nil || c.ValueB != nil, values)
			}
		}
	}
}
