package repair

import (
	"context"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdwrite"
)

// TestWriteRecoveredAndUndo: a recovery creates keys only while absent and
// while the namespace they need is the same one; its undo deletes only what
// is still as written, and never a namespace that holds other objects.
func TestWriteRecoveredAndUndo(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	ctx := context.Background()
	const reg = "/registry/"
	put := func(k, v string) int64 {
		t.Helper()
		resp, err := cli.Put(ctx, k, v)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Header.Revision
	}
	nsRev := put(reg+"namespaces/a", "ns-a")
	put(reg+"configmaps/a/taken", "someone else's")
	oldNS := put(reg+"namespaces/b", "ns-b")
	if _, err := cli.Delete(ctx, reg+"namespaces/b"); err != nil {
		t.Fatal(err)
	}
	put(reg+"namespaces/b", "ns-b again")
	needA := []backup.Present{{Key: reg + "namespaces/a", CreateRevision: nsRev, What: "namespace a"}}
	entries := []backup.Entry{
		{Key: reg + "configmaps/a/one", Value: []byte("one"), Present: needA},
		{Key: reg + "configmaps/a/taken", Value: []byte("from the snapshot"), Present: needA},
		{Key: reg + "configmaps/b/x", Value: []byte("x"), Present: []backup.Present{{Key: reg + "namespaces/b", CreateRevision: oldNS, What: "namespace b"}}},
		{Key: reg + "events/a/e", Value: []byte("event"), Lease: 42, Present: needA},
	}
	res, err := WriteRecovered(ctx, cli, entries, etcdwrite.Pacing{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []etcdwrite.Outcome{etcdwrite.Recovered, etcdwrite.Conflict, etcdwrite.Refused, etcdwrite.Recovered}
	for i, r := range res {
		if r.Outcome != want[i] {
			t.Errorf("%s: %s (%s), want %s", r.Key, r.Outcome, r.Detail, want[i])
		}
	}
	if got, _ := cli.Get(ctx, reg+"configmaps/a/taken"); string(got.Kvs[0].Value) != "someone else's" {
		t.Error("an existing key was overwritten")
	}
	if got, _ := cli.Get(ctx, reg+"configmaps/b/x"); len(got.Kvs) != 0 {
		t.Error("written into a namespace created again")
	}
	if got, _ := cli.Get(ctx, reg+"events/a/e"); len(got.Kvs) != 1 || got.Kvs[0].Lease == 0 {
		t.Error("a key that had a lease was written without one")
	}
	if entries[0].ModRevision == 0 {
		t.Error("the written revision is not recorded")
	}

	// The undo: namespace a was "recovered" too, and someone put an object
	// of their own in it since; the event changed since.
	b := &backup.Backup{Prefix: reg, Action: backup.ActionRecover, Entries: []backup.Entry{
		{Key: reg + "namespaces/a", Value: []byte("ns-a"), ModRevision: nsRev},
		entries[0], entries[3],
	}}
	put(reg+"events/a/e", "changed")
	plan, err := UndoRecover(ctx, cli, b, t.TempDir(), true, etcdwrite.Pacing{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantPlan := map[string]etcdwrite.Outcome{reg + "configmaps/a/one": "would-delete", reg + "events/a/e": etcdwrite.SkippedChanged, reg + "namespaces/a": etcdwrite.Refused}
	for _, r := range plan {
		if r.Outcome != wantPlan[r.Key] {
			t.Errorf("undo plan %s: %s (%s), want %s", r.Key, r.Outcome, r.Detail, wantPlan[r.Key])
		}
	}
	done, err := UndoRecover(ctx, cli, b, t.TempDir(), false, etcdwrite.Pacing{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range done {
		if r.Key == reg+"configmaps/a/one" && r.Outcome != etcdwrite.Deleted {
			t.Errorf("undo %s: %s (%s)", r.Key, r.Outcome, r.Detail)
		}
	}
	for k, present := range map[string]bool{reg + "configmaps/a/one": false, reg + "namespaces/a": true, reg + "events/a/e": true} {
		got, _ := cli.Get(ctx, k, clientv3.WithCountOnly())
		if (got.Count == 1) != present {
			t.Errorf("%s present %v, want %v", k, got.Count == 1, present)
		}
	}
}

// TestUndoKeepsANamespaceHoldingARecoveredKeyChangedSince: the undo leaves
// alone a recovered key someone changed since, so it must leave its
// namespace too, or that key becomes a ghost.
func TestUndoKeepsANamespaceHoldingARecoveredKeyChangedSince(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	ctx := context.Background()
	const reg = "/registry/"
	entries := []backup.Entry{{Key: reg + "namespaces/c", Value: []byte("ns-c")}, {Key: reg + "configmaps/c/x", Value: []byte("x")}}
	if _, err := WriteRecovered(ctx, cli, entries, etcdwrite.Pacing{}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, reg+"configmaps/c/x", "edited"); err != nil {
		t.Fatal(err)
	}
	res, err := UndoRecover(ctx, cli, &backup.Backup{Prefix: reg, Action: backup.ActionRecover, Entries: entries}, t.TempDir(), false, etcdwrite.Pacing{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]etcdwrite.Outcome{reg + "namespaces/c": etcdwrite.Refused, reg + "configmaps/c/x": etcdwrite.SkippedChanged}
	for _, r := range res {
		if r.Outcome != want[r.Key] {
			t.Errorf("%s: %s (%s), want %s", r.Key, r.Outcome, r.Detail, want[r.Key])
		}
	}
	if got, _ := cli.Get(ctx, reg+"namespaces/c"); len(got.Kvs) != 1 {
		t.Error("the namespace was deleted under a key left alone")
	}
}

// TestUndoDeletesOnlyWhatTheRecordSaysWasWritten: a recovery's backup
// lists a key it did not write (a custom resource left for a second run);
// a second run wrote it with the same bytes. Undoing the first run leaves
// it, and deletes the key the audit log says the first run wrote, at that
// revision only.
func TestUndoDeletesOnlyWhatTheRecordSaysWasWritten(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	ctx := context.Background()
	const reg = "/registry/"
	dir := t.TempDir()
	first := []backup.Entry{{Key: reg + "configmaps/d/one", Value: []byte("one")}}
	res, err := WriteRecovered(ctx, cli, first, etcdwrite.Pacing{}, nil)
	if err != nil || res[0].Revision == 0 {
		t.Fatalf("first run: %+v %v", res, err)
	}
	if err := backup.AppendAudit(dir, backup.ActionRecover, append(res, etcdwrite.Result{Key: reg + "widgets.example.com/d/w", Outcome: etcdwrite.Refused})); err != nil {
		t.Fatal(err)
	}
	// The second run writes the custom resource, byte for byte.
	if _, err := cli.Put(ctx, reg+"widgets.example.com/d/w", "w"); err != nil {
		t.Fatal(err)
	}
	b := &backup.Backup{Prefix: reg, Action: backup.ActionRecover, Entries: []backup.Entry{
		{Key: reg + "configmaps/d/one", Value: []byte("one")},
		{Key: reg + "widgets.example.com/d/w", Value: []byte("w")},
	}}
	done, err := UndoRecover(ctx, cli, b, dir, false, etcdwrite.Pacing{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]etcdwrite.Outcome{reg + "configmaps/d/one": etcdwrite.Deleted, reg + "widgets.example.com/d/w": etcdwrite.LeftAsIs}
	for _, r := range done {
		if r.Outcome != want[r.Key] {
			t.Errorf("%s: %s (%s), want %s", r.Key, r.Outcome, r.Detail, want[r.Key])
		}
	}
	if got, _ := cli.Get(ctx, reg+"widgets.example.com/d/w", clientv3.WithCountOnly()); got.Count != 1 {
		t.Error("the undo deleted what the second run wrote")
	}
}
