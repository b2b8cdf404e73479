package repair

import (
	"context"
	"testing"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdwrite"
)

// TestOneKeyTransactions: in one-key mode (kine's transaction shapes) a
// delete still skips a changed key and a key whose witness came back, and a
// restore still never overwrites.
func TestOneKeyTransactions(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	ctx := context.Background()
	var entries []backup.Entry
	for _, k := range []string{"/registry/pods/a/1", "/registry/pods/b/1", "/registry/pods/a/2", "/registry/pods/c/1"} {
		e := backup.EntryOf(etcdtest.Put(t, cli, k, "v"))
		e.Absent = []string{"/registry/namespaces/" + k[len("/registry/pods/"):len("/registry/pods/")+1]}
		entries = append(entries, e)
	}
	etcdtest.Put(t, cli, "/registry/namespaces/a", "recreated")
	etcdtest.Put(t, cli, "/registry/pods/c/1", "changed")
	p := etcdwrite.Pacing{PerSecond: 1000, OneKey: true}
	results, err := GuardedDelete(ctx, cli, entries, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []etcdwrite.Outcome{etcdwrite.SkippedChanged, etcdwrite.Deleted, etcdwrite.SkippedChanged, etcdwrite.SkippedChanged}
	for i, r := range results {
		if r.Outcome != want[i] {
			t.Errorf("%s: %s, want %s (%s)", r.Key, r.Outcome, want[i], r.Detail)
		}
	}
	etcdtest.Put(t, cli, "/registry/pods/a/1", "other")
	res, err := Restore(ctx, cli, &backup.Backup{Entries: entries}, p, false)
	if err != nil {
		t.Fatal(err)
	}
	wantR := []etcdwrite.Outcome{etcdwrite.Conflict, etcdwrite.Restored, etcdwrite.AlreadyPresent, etcdwrite.Conflict}
	for i, r := range res {
		if r.Outcome != wantR[i] {
			t.Errorf("restore %s: %s, want %s (%s)", r.Key, r.Outcome, wantR[i], r.Detail)
		}
	}
}
