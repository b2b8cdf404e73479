package snapshot

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdwrite"
)

// TestLogicalSnapshot: a logical snapshot holds every key at its revision,
// verifies, proves it holds the backup's entries, refuses to overwrite, and
// any damage (a flipped byte, a cut file, a dropped line, a line added after
// the trailer, no header) fails verification with one line.
func TestLogicalSnapshot(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	ctx := context.Background()
	e := backup.EntryOf(etcdtest.Put(t, cli, "/registry/secrets/x/s", "k8s:enc:aescbc:v1:key1:\x01\x02\n{\"end\":true}"))
	etcdtest.Put(t, cli, "/registry/configmaps/x/c", "v")
	path := filepath.Join(t.TempDir(), LogicalSnapshotFile)
	info, err := SaveLogical(ctx, cli, etcdwrite.Datastore{Name: "etcd"}, path, e.ModRevision)
	if err != nil {
		t.Fatal(err)
	}
	if info.Format != "logical" || info.TotalKeys != 2 || info.Revision < e.ModRevision {
		t.Errorf("info %+v", info)
	}
	if !IsLogical(path) {
		t.Error("not recognised as logical")
	}
	if v, err := VerifySnapshot(path); err != nil || v.SHA256 != info.SHA256 {
		t.Errorf("VerifySnapshot: %+v %v", v, err)
	}
	if err := SnapshotHolds(path, []backup.Entry{e}); err != nil {
		t.Errorf("SnapshotHolds: %v", err)
	}
	stale := e
	stale.ModRevision--
	if err := SnapshotHolds(path, []backup.Entry{stale}); err == nil {
		t.Error("a revision mismatch was not detected")
	}
	if err := SnapshotHolds(path, []backup.Entry{{Key: "/registry/pods/x/p"}}); err == nil {
		t.Error("a missing key was not detected")
	}
	if _, err := SaveLogical(ctx, cli, etcdwrite.Datastore{Name: "etcd"}, path, 0); err == nil {
		t.Error("an existing snapshot was overwritten")
	}
	if _, err := SaveLogical(ctx, cli, etcdwrite.Datastore{Name: "etcd"}, path+"2", 1<<40); err == nil {
		t.Error("a snapshot behind the scan was taken")
	}
	b, err := BackupFromLogical(path, "/registry/secrets/")
	if err != nil || len(b.Entries) != 1 || !bytes.Equal(b.Entries[0].Value, e.Value) {
		t.Fatalf("BackupFromLogical: %+v %v", b, err)
	}
	data, _ := os.ReadFile(path)
	lines := bytes.SplitAfter(data, []byte("\n"))
	for name, bad := range map[string][]byte{
		"flipped":    flip(data, len(data)/2),
		"cut":        data[:len(data)-10],
		"no-trailer": bytes.Join(lines[:len(lines)-2], nil),
		"dropped":    append(append(append([]byte{}, lines[0]...), lines[2]...), lines[3]...),
		"appended":   append(append([]byte{}, data...), lines[1]...),
		"no-header":  bytes.Join(lines[1:], nil),
		"empty":      nil,
	} {
		p := filepath.Join(t.TempDir(), name+".jsonl")
		if err := os.WriteFile(p, bad, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := VerifyLogical(p)
		if err == nil {
			t.Errorf("%s snapshot verified", name)
			continue
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error is not one line: %q", name, err)
		}
	}
}

// flip returns b with byte i inverted.
func flip(b []byte, i int) []byte {
	c := append([]byte{}, b...)
	c[i] ^= 0xff
	return c
}
