package repair

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/impact"
	"github.com/regghost/regghost/pkg/protect"
	"github.com/regghost/regghost/pkg/snapshot"
)

func TestGuardedDeleteSkipsChangedKeys(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	var entries []backup.Entry
	for _, k := range []string{"/registry/pods/a/1", "/registry/pods/a/2", "/registry/pods/a/3", "/registry/pods/a/4"} {
		entries = append(entries, backup.EntryOf(etcdtest.Put(t, cli, k, "v")))
	}
	etcdtest.Put(t, cli, "/registry/pods/a/2", "changed")
	if _, err := cli.Delete(context.Background(), "/registry/pods/a/3"); err != nil {
		t.Fatal(err)
	}
	// Batches of 2 put the changed key in a batch whose compare fails, so the
	// per-key fallback is exercised.
	var journal []etcdwrite.Result
	results, err := GuardedDelete(context.Background(), cli, entries, etcdwrite.Pacing{BatchSize: 2, PerSecond: 1000}, func(r etcdwrite.Result) { journal = append(journal, r) })
	if err != nil {
		t.Fatal(err)
	}
	want := []etcdwrite.Outcome{etcdwrite.Deleted, etcdwrite.SkippedChanged, etcdwrite.SkippedGone, etcdwrite.Deleted}
	for i, r := range results {
		if r.Outcome != want[i] {
			t.Errorf("%s: %s, want %s (%s)", r.Key, r.Outcome, want[i], r.Detail)
		}
	}
	if resp, _ := cli.Get(context.Background(), "/registry/pods/a/2"); len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "changed" {
		t.Error("the changed key was deleted")
	}
	// The journal heard each key as its transaction returned, and again
	// when the read-back changed the story (a/3 was gone, not changed).
	if len(journal) != 6 || journal[5].Key != "/registry/pods/a/3" || journal[5].Outcome != etcdwrite.SkippedGone {
		t.Errorf("journal: %+v", journal)
	}
}

// TestGuardedDeleteRechecksTheWitness: a namespace created again between the
// scan and the delete makes its objects no ghosts; the delete transaction
// itself sees the namespace key and leaves them alone, while other keys of
// the same batch go.
func TestGuardedDeleteRechecksTheWitness(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	var entries []backup.Entry
	for _, k := range []string{"/registry/pods/a/1", "/registry/pods/b/1", "/registry/pods/a/2"} {
		e := backup.EntryOf(etcdtest.Put(t, cli, k, "v"))
		e.Absent = []string{"/registry/namespaces/" + k[len("/registry/pods/"):len("/registry/pods/")+1]}
		entries = append(entries, e)
	}
	etcdtest.Put(t, cli, "/registry/namespaces/a", "recreated")
	results, err := GuardedDelete(context.Background(), cli, entries, etcdwrite.Pacing{BatchSize: 3, PerSecond: 1000}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []etcdwrite.Outcome{etcdwrite.SkippedChanged, etcdwrite.Deleted, etcdwrite.SkippedChanged}
	for i, r := range results {
		if r.Outcome != want[i] {
			t.Errorf("%s: %s, want %s (%s)", r.Key, r.Outcome, want[i], r.Detail)
		}
		if r.Outcome == etcdwrite.SkippedChanged && r.Detail != "no longer a ghost: /registry/namespaces/a exists again since the scan; left alone" {
			t.Errorf("%s: detail %q", r.Key, r.Detail)
		}
	}
}

// TestGuardedDeleteKeepsCompareCountUnderTheLimit: etcd's --max-txn-ops
// (128) counts compares too; a full batch whose keys each rest on another
// absent key must be split, not refused by etcd.
func TestGuardedDeleteKeepsCompareCountUnderTheLimit(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	var entries []backup.Entry
	for i := 0; i < 128; i++ {
		e := backup.EntryOf(etcdtest.Put(t, cli, fmt.Sprintf("/registry/pods/ns%d/p", i), "v"))
		e.Absent = []string{fmt.Sprintf("/registry/namespaces/ns%d", i)}
		entries = append(entries, e)
	}
	results, err := GuardedDelete(context.Background(), cli, entries, etcdwrite.Pacing{BatchSize: 128, PerSecond: 1000}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if r.Outcome != etcdwrite.Deleted {
			t.Fatalf("%s: %s (%s)", r.Key, r.Outcome, r.Detail)
		}
	}
}

func TestRestoreIsIdempotentAndNeverOverwrites(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	a := backup.EntryOf(etcdtest.Put(t, cli, "/registry/configmaps/x/a", "\x00raw\xffbytes"))
	b := backup.EntryOf(etcdtest.Put(t, cli, "/registry/configmaps/x/b", "original"))
	if _, err := cli.Delete(context.Background(), "/registry/configmaps/", clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	etcdtest.Put(t, cli, "/registry/configmaps/x/b", "someone else")
	backup := &backup.Backup{Entries: []backup.Entry{a, b}}
	for round, want := range [][]etcdwrite.Outcome{{etcdwrite.Restored, etcdwrite.Conflict}, {etcdwrite.AlreadyPresent, etcdwrite.Conflict}} {
		results, err := Restore(context.Background(), cli, backup, etcdwrite.Pacing{PerSecond: 1000}, false)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range results {
			if r.Outcome != want[i] {
				t.Errorf("round %d %s: %s, want %s", round, r.Key, r.Outcome, want[i])
			}
		}
	}
	resp, _ := cli.Get(context.Background(), "/registry/configmaps/x/a")
	if string(resp.Kvs[0].Value) != "\x00raw\xffbytes" {
		t.Error("restored bytes differ")
	}
}

func TestBackupRoundTripAndCorruption(t *testing.T) {
	dir := t.TempDir()
	b := &backup.Backup{Scope: "namespace x", ClusterID: "c0ffee", Entries: []backup.Entry{{Key: "/registry/pods/x/p", Value: []byte("k8s\x00\x01\x02"), ModRevision: 7}}}
	path, _, err := backup.WriteBackup(dir, b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + ".part"); !os.IsNotExist(err) {
		t.Error("temporary file left behind")
	}
	good, _ := os.ReadFile(path)
	tests := map[string][]byte{
		"truncated":  good[:len(good)-20],
		"not json":   []byte("hello"),
		"bit flip":   []byte(string(good[:len(good)/2]) + "X" + string(good[len(good)/2+1:])),
		"empty file": {},
		// The entries are intact but the header says another scope.
		"header edited":   []byte(strings.Replace(string(good), `"scope": "namespace x"`, `"scope": "namespace y"`, 1)),
		"cluster changed": []byte(strings.Replace(string(good), `"clusterID": "c0ffee"`, `"clusterID": "beef"`, 1)),
	}
	for name, data := range tests {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), backup.BackupFile)
			if err := os.WriteFile(p, data, 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := backup.ReadBackup(p); !errors.Is(err, backup.ErrCorruptBackup) {
				t.Errorf("err = %v, want ErrCorruptBackup", err)
			}
		})
	}
	if back, err := backup.ReadBackup(dir); err != nil || back.Count != 1 {
		t.Errorf("read back: %v %+v", err, back)
	}
}

func TestSnapshotSaveVerifyAndHolds(t *testing.T) {
	cli, ep := etcdtest.Start(t)
	e := backup.EntryOf(etcdtest.Put(t, cli, "/registry/secrets/x/s", "k8s:enc:aescbc:v1:key1:\x01\x02"))
	path := filepath.Join(t.TempDir(), "snap.db")
	info, err := snapshot.SaveSnapshot(context.Background(), clientv3.Config{Endpoints: []string{ep}}, path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Revision < e.ModRevision || info.TotalKeys < 1 {
		t.Errorf("snapshot info %+v", info)
	}
	if err := snapshot.SnapshotHolds(path, []backup.Entry{e}); err != nil {
		t.Errorf("SnapshotHolds: %v", err)
	}
	stale := e
	stale.ModRevision--
	if err := snapshot.SnapshotHolds(path, []backup.Entry{stale}); err == nil {
		t.Error("a revision mismatch was not detected")
	}
	if _, err := snapshot.SaveSnapshot(context.Background(), clientv3.Config{Endpoints: []string{ep}}, path); err == nil {
		t.Error("an existing snapshot was overwritten")
	}
	// A flipped byte or a cut file must fail verification.
	data, _ := os.ReadFile(path)
	for name, bad := range map[string][]byte{"flipped": flip(data, len(data)/2), "cut": data[:len(data)-100]} {
		p := filepath.Join(t.TempDir(), name+".db")
		if err := os.WriteFile(p, bad, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := snapshot.VerifySnapshot(p); err == nil {
			t.Errorf("%s snapshot verified", name)
		}
	}
}

func flip(b []byte, i int) []byte {
	c := append([]byte{}, b...)
	c[i] ^= 0xff
	return c
}

// TestRetainRefusals: Retain is set through the API server or not at all,
// and a volume changed since the scan stops the purge.
func TestRetainRefusals(t *testing.T) {
	vols := []impact.Volume{{Name: "pv1", Key: "/registry/persistentvolumes/pv1", ReclaimPolicy: "Delete"}}
	if _, err := RetainVolumes(context.Background(), nil, vols); err == nil {
		t.Error("RetainVolumes without an API server went ahead")
	}
	cli, _ := etcdtest.Start(t)
	e := backup.EntryOf(etcdtest.Put(t, cli, vols[0].Key, "pv"))
	vols[0].ModRevision = e.ModRevision
	if _, _, err := protect.Capture(context.Background(), cli, etcdwrite.Datastore{Name: "etcd"}, volumeWants(vols)); err != nil {
		t.Fatalf("unchanged volume: %v", err)
	}
	etcdtest.Put(t, cli, vols[0].Key, "pv, changed")
	if _, _, err := protect.Capture(context.Background(), cli, etcdwrite.Datastore{Name: "etcd"}, volumeWants(vols)); err == nil {
		t.Error("a volume changed since the scan was accepted")
	}
}

// TestUnfinished: a purge cut off half-way is seen from its audit log.
func TestUnfinished(t *testing.T) {
	dir := t.TempDir()
	b := &backup.Backup{Entries: []backup.Entry{{Key: "/registry/pods/x/a"}, {Key: "/registry/pods/x/b"}, {Key: "/registry/persistentvolumes/pv", Role: backup.RoleRetainedVolume}}}
	if n, err := backup.Unfinished(dir, b); err != nil || n != 2 {
		t.Errorf("no audit log: %d %v", n, err)
	}
	if err := backup.AppendAudit(dir, "purge", []etcdwrite.Result{{Key: "/registry/pods/x/a", Outcome: etcdwrite.Deleted}, {Key: "/registry/pods/x/b", Outcome: etcdwrite.NotAttempted}}); err != nil {
		t.Fatal(err)
	}
	if n, err := backup.Unfinished(dir, b); err != nil || n != 1 {
		t.Errorf("one key done: %d %v", n, err)
	}
}

// TestRestoreReattachesLeases: a key that had a lease comes back with a new
// one of the TTL it had left, so it still expires.
func TestRestoreReattachesLeases(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	ctx := context.Background()
	lease, err := cli.Grant(ctx, 120)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, "/registry/events/x/e1", "event", clientv3.WithLease(lease.ID)); err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Get(ctx, "/registry/events/x/e1")
	if err != nil {
		t.Fatal(err)
	}
	plan := &Plan{Targets: []etcdscan.Finding{{Key: "/registry/events/x/e1", ModRevision: resp.Kvs[0].ModRevision, Classes: []etcdscan.Class{etcdscan.ClassOrphanedNamespace}, Reasons: []string{"r"}}}}
	entries, _, err := protect.Capture(ctx, cli, etcdwrite.Datastore{Name: "etcd"}, targetWants(plan))
	if err != nil || len(entries) != 1 || entries[0].LeaseTTL <= 0 || entries[0].LeaseTTL > 120 {
		t.Fatalf("entries %+v: %v", entries, err)
	}
	if _, err := cli.Revoke(ctx, lease.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := Restore(ctx, cli, &backup.Backup{Entries: entries}, etcdwrite.Pacing{PerSecond: 1000}, false); err != nil {
		t.Fatal(err)
	}
	resp, err = cli.Get(ctx, "/registry/events/x/e1")
	if err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].Lease == 0 {
		t.Fatalf("restored without a lease: %+v %v", resp.Kvs, err)
	}
	ttl, err := cli.TimeToLive(ctx, clientv3.LeaseID(resp.Kvs[0].Lease))
	if err != nil || ttl.TTL <= 0 || ttl.TTL > 120 {
		t.Errorf("new lease TTL %d: %v", ttl.TTL, err)
	}
}

func TestTransient(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{rpctypes.ErrNoLeader, true},
		{rpctypes.ErrGRPCNoLeader, true},
		{rpctypes.ErrTimeout, true},
		{rpctypes.ErrGRPCTimeoutDueToLeaderFail, true},
		{rpctypes.ErrLeaderChanged, true},
		{context.DeadlineExceeded, true},
		{status.Error(codes.Unavailable, "connection reset"), true},
		{rpctypes.ErrGRPCTooManyOps, false},
		{rpctypes.ErrGRPCPermissionDenied, false},
		{context.Canceled, false},
		{errors.New("something else"), false},
		{nil, false},
	}
	for _, tt := range tests {
		if got := etcdwrite.Transient(tt.err); got != tt.want {
			t.Errorf("%v: %v, want %v", tt.err, got, tt.want)
		}
	}
}

// TestLock: a second writer is refused with who holds the lock; once the
// first is done, it can go.
func TestLock(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	ctx := context.Background()
	unlock, err := etcdwrite.Lock(ctx, cli, "purge namespace a")
	if err != nil {
		t.Fatalf("first lock: %v", err)
	}
	if _, err := etcdwrite.Lock(ctx, cli, "restore b"); !errors.Is(err, etcdwrite.ErrLocked) || !strings.Contains(err.Error(), "purge namespace a (pid") {
		t.Errorf("second writer: %v", err)
	}
	unlock()
	unlock2, err := etcdwrite.Lock(ctx, cli, "restore b")
	if err != nil {
		t.Fatalf("after unlock: %v", err)
	}
	unlock2()
}
