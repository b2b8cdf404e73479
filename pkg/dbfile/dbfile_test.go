package dbfile

import (
	"context"
	"path/filepath"
	"testing"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/snapshot"
	"go.uber.org/zap"

	"github.com/regghost/regghost/internal/etcdtest"
)

// TestLatestRevisionAndTombstones snapshots an embedded etcd whose keys were
// overwritten, deleted and recreated, and reads the file back.
func TestLatestRevisionAndTombstones(t *testing.T) {
	cli, ep := etcdtest.Start(t)
	ctx := context.Background()
	steps := []func() error{
		func() error { _, err := cli.Put(ctx, "/registry/pods/a/p1", "v1"); return err },
		func() error { _, err := cli.Put(ctx, "/registry/pods/a/p1", "v2"); return err },
		func() error { _, err := cli.Put(ctx, "/registry/pods/a/gone", "x"); return err },
		func() error { _, err := cli.Delete(ctx, "/registry/pods/a/gone"); return err },
		func() error { _, err := cli.Put(ctx, "/registry/pods/a/back", "old"); return err },
		func() error { _, err := cli.Delete(ctx, "/registry/pods/a/back"); return err },
		func() error { _, err := cli.Put(ctx, "/registry/pods/a/back", "new"); return err },
		func() error { _, err := cli.Put(ctx, "/other", "y"); return err },
	}
	for _, s := range steps {
		if err := s(); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "snap.db")
	if _, err := snapshot.SaveWithVersion(ctx, zap.NewNop(), clientv3.Config{Endpoints: []string{ep}}, path); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got := map[string]string{}
	if err := s.Range(ctx, "/registry/", "/registry0", false, func(kv *mvccpb.KeyValue) error {
		got[string(kv.Key)] = string(kv.Value)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"/registry/pods/a/p1": "v2", "/registry/pods/a/back": "new"}
	if len(got) != len(want) || got["/registry/pods/a/p1"] != "v2" || got["/registry/pods/a/back"] != "new" {
		t.Errorf("got %v, want %v", got, want)
	}
	if kv, _ := s.Get(ctx, "/registry/pods/a/gone"); kv != nil {
		t.Error("a deleted key is visible")
	}
	if s.Revision() < 9 {
		t.Errorf("revision %d", s.Revision())
	}
	if _, err := Open(filepath.Join(t.TempDir(), "none.db")); err == nil {
		t.Error("a missing file opened")
	}
}
