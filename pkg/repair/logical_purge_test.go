package repair

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/snapshot"
)

// TestBackupFromLogicalPurge: restoring a purge's logical snapshot writes
// back the purge's own keys by default, with the purge's record of their
// witnesses, and needs the purge's backup beside it; --all-absent takes every
// key of the snapshot, also what was deleted since by someone else.
func TestBackupFromLogicalPurge(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	ctx := context.Background()
	ghost := backup.EntryOf(etcdtest.Put(t, cli, "/registry/pods/gone/p", "k8s\x00ghost"))
	ghost.Absent = []string{"/registry/namespaces/gone"}
	etcdtest.Put(t, cli, "/registry/namespaces/live", "k8s\x00live")
	other := backup.EntryOf(etcdtest.Put(t, cli, "/registry/pods/live/deleted-since", "k8s\x00deleted by a controller"))
	dir := t.TempDir()
	snap := filepath.Join(dir, snapshot.LogicalSnapshotFile)
	info, err := snapshot.SaveLogical(ctx, cli, etcdwrite.Datastore{Name: "etcd"}, snap, other.ModRevision)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := backup.WriteBackup(dir, &backup.Backup{Scope: "namespace gone", Prefix: "/registry/", ScanRevision: other.ModRevision, Snapshot: info, Entries: []backup.Entry{ghost}}); err != nil {
		t.Fatal(err)
	}
	// The purge deletes the ghost; a controller deletes the other pod.
	for _, k := range []string{ghost.Key, other.Key} {
		if _, err := cli.Delete(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	// A snapshot without its purge's backup, and one beside the backup of
	// another snapshot.
	alone := filepath.Join(t.TempDir(), snapshot.LogicalSnapshotFile)
	copyFile(t, snap, alone)
	elsewhere := t.TempDir()
	mismatched := filepath.Join(elsewhere, snapshot.LogicalSnapshotFile)
	copyFile(t, snap, mismatched)
	otherInfo := *info
	otherInfo.SHA256 = strings.Repeat("0", 64)
	if _, _, err := backup.WriteBackup(elsewhere, &backup.Backup{Scope: "namespace gone", Prefix: "/registry/", Snapshot: &otherInfo, Entries: []backup.Entry{ghost}}); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name    string
		path    string
		all     bool
		keys    []string
		would   int
		noBkErr bool
	}{
		{name: "default: the purge's own keys", path: snap, keys: []string{ghost.Key}, would: 1},
		{name: "--all-absent: every key of the snapshot", path: snap, all: true, keys: []string{"/registry/namespaces/live", ghost.Key, other.Key}, would: 2},
		{name: "no purge backup beside it", path: alone, noBkErr: true},
		{name: "no purge backup beside it, --all-absent", path: alone, all: true, keys: []string{"/registry/namespaces/live", ghost.Key, other.Key}, would: 2},
		{name: "the backup beside it is of another snapshot", path: mismatched, noBkErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := snapshot.BackupFromLogicalPurge(tt.path, "", tt.all)
			if tt.noBkErr {
				if !errors.Is(err, snapshot.ErrNoPurgeBackup) || strings.Contains(err.Error(), "\n") {
					t.Errorf("err = %v, want one line: %v", err, snapshot.ErrNoPurgeBackup)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var keys []string
			for _, e := range b.Entries {
				keys = append(keys, e.Key)
				if e.Key == ghost.Key && tt.path == snap && strings.Join(e.Absent, ",") != "/registry/namespaces/gone" {
					t.Errorf("%s lost the purge's witness record: %v", e.Key, e.Absent)
				}
			}
			if strings.Join(keys, " ") != strings.Join(tt.keys, " ") {
				t.Errorf("keys %v, want %v", keys, tt.keys)
			}
			res, err := RestoreWith(ctx, cli, b, RestoreOptions{DryRun: true, Prefix: "/registry/"})
			if err != nil {
				t.Fatal(err)
			}
			would := 0
			for _, r := range res {
				if r.Outcome == etcdwrite.WouldRestore {
					would++
				}
			}
			if would != tt.would {
				t.Errorf("%d keys would be restored, want %d: %+v", would, tt.would, res)
			}
		})
	}

	// The purge's record goes with its keys: the ghost's namespace created
	// again since refuses it, by default and with --all-absent.
	etcdtest.Put(t, cli, "/registry/namespaces/gone", "k8s\x00a new namespace gone")
	for _, all := range []bool{false, true} {
		b, err := snapshot.BackupFromLogicalPurge(snap, "/registry/pods/gone/", all)
		if err != nil {
			t.Fatal(err)
		}
		res, err := RestoreWith(ctx, cli, b, RestoreOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != 1 || res[0].Outcome != etcdwrite.Refused || !strings.Contains(res[0].Detail, "absent when the purge deleted this key") {
			t.Errorf("all=%v: %+v, want the ghost refused by its recorded witness", all, res)
		}
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
