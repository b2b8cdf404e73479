package backup

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/regghost/regghost/pkg/etcdwrite"
)

// TestPlanPrune: prune keeps each cluster's newest verified backup, its
// Keep newest, those younger than OlderThan, and every backup that cannot
// be read, was cut off, or an undo still needs; it removes the rest.
func TestPlanPrune(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	root := t.TempDir()
	write := func(name, cluster, action string, age time.Duration, audit ...AuditRecord) string {
		t.Helper()
		dir, err := NewBackupDir(root, name, now.Add(-age))
		if err != nil {
			t.Fatal(err)
		}
		b := &Backup{Created: now.Add(-age), Scope: name, Action: action, KubeSystemUID: cluster,
			Entries: []Entry{{Key: "/registry/configmaps/" + name + "/c", Value: []byte("v"), ModRevision: 5}}}
		if _, _, err := WriteBackup(dir, b); err != nil {
			t.Fatal(err)
		}
		if len(audit) == 0 {
			audit = []AuditRecord{{Action: "purge", Key: b.Entries[0].Key, Outcome: etcdwrite.Deleted}}
		}
		for _, r := range audit {
			if err := AppendAudit(dir, r.Action, []etcdwrite.Result{{Key: r.Key, Outcome: r.Outcome}}); err != nil {
				t.Fatal(err)
			}
		}
		return filepath.Base(dir)
	}
	day := 24 * time.Hour
	a10 := write("a10", "uid-a", "", 10*day)
	a5 := write("a5", "uid-a", "", 5*day)
	a2 := write("a2", "uid-a", "", 2*day)
	a0 := write("a0", "uid-a", "", time.Hour)
	b30 := write("b30", "uid-b", "", 30*day)
	rec := write("rec", "uid-a", ActionRecover, 20*day, AuditRecord{Action: "recover", Key: "/registry/configmaps/rec/c", Outcome: etcdwrite.Recovered})
	undone := write("undone", "uid-a", ActionRecover, 21*day, AuditRecord{Action: "recover", Key: "/registry/configmaps/undone/c", Outcome: etcdwrite.Recovered},
		AuditRecord{Action: "undo-recover", Key: "/registry/configmaps/undone/c", Outcome: etcdwrite.Deleted})
	cut := write("cut", "uid-a", "", 40*day, AuditRecord{Action: "purge", Key: "/registry/configmaps/other/c", Outcome: etcdwrite.Deleted})
	anon := write("anon", "", "", 50*day)
	if err := os.MkdirAll(filepath.Join(root, "20260101T000000Z-broken"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "20260101T000000Z-broken", "backup.json"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		o       PruneOptions
		removed []string
		why     map[string]string
	}{
		{"keep two, older than three days", PruneOptions{Keep: 2, OlderThan: 3 * day, Now: now}, []string{a10, a5, undone},
			map[string]string{a0: "the newest verified backup of cluster uid-a", a2: "among the 2 newest", b30: "the newest verified backup of cluster uid-b",
				rec: "the recovery wrote 1 key and was not undone", cut: "cut off", "20260101T000000Z-broken": "cannot be read or verified",
				anon: "does not record which cluster"}},
		{"keep one, older than a week", PruneOptions{Keep: 1, OlderThan: 7 * day, Now: now}, []string{a10, undone},
			map[string]string{a5: "younger than 168h0m0s", a2: "younger than",
				// What goes says whose undo it was.
				a10:    "it is the only undo of its purge of a10 (1 keys written): once it goes, regghost restore cannot put them back",
				undone: "its write was undone already"}},
		{"keep zero is keep one", PruneOptions{Now: now}, []string{a10, a5, a2, undone}, map[string]string{a0: "the newest verified backup"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			plan, err := PlanPrune(root, tt.o)
			if err != nil {
				t.Fatal(err)
			}
			var removed []string
			for _, d := range plan {
				name := filepath.Base(d.Path)
				if d.Remove {
					removed = append(removed, name)
				}
				if want, ok := tt.why[name]; ok && !strings.Contains(d.Why, want) {
					t.Errorf("%s: %q, want it to say %q", name, d.Why, want)
				}
				if d.Bytes <= 0 {
					t.Errorf("%s: %d bytes", name, d.Bytes)
				}
			}
			slices.Sort(removed)
			want := slices.Clone(tt.removed)
			slices.Sort(want)
			if !slices.Equal(removed, want) {
				t.Errorf("removed %v, want %v", removed, want)
			}
		})
	}
	plan, _ := PlanPrune(root, PruneOptions{Keep: 2, OlderThan: 3 * day, Now: now})
	freed, err := Prune(plan)
	if err != nil || freed <= 0 {
		t.Fatalf("Prune: %d, %v", freed, err)
	}
	for _, d := range plan {
		_, err := os.Stat(d.Path)
		if gone := os.IsNotExist(err); gone != d.Remove {
			t.Errorf("%s: gone %v, planned removal %v", d.Path, gone, d.Remove)
		}
	}
}

// TestHoldingsOf counts the backup directories under a root and their
// bytes, with the filesystem's free bytes and reserve; a root not made yet
// holds nothing.
func TestHoldingsOf(t *testing.T) {
	root := t.TempDir()
	for i, size := range []int{1000, 3000} {
		dir := filepath.Join(root, "b"+string(rune('0'+i)))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "snapshot.db"), make([]byte, size), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	h, err := HoldingsOf(root)
	if err != nil || h.Backups != 2 || h.Bytes != 4000 || h.Free == 0 || h.Keep < 1<<30 {
		t.Fatalf("HoldingsOf: %+v, %v", h, err)
	}
	h, err = HoldingsOf(filepath.Join(root, "not", "made"))
	if err != nil || h.Backups != 0 || h.Free == 0 {
		t.Fatalf("HoldingsOf a root not made: %+v, %v", h, err)
	}
}

// TestNeedsOfAnOlderBackup: a backup of unstick or dangling written before
// entries recorded their needs, and before the backup recorded its action,
// is known by its audit log's action; its entries then need the namespace
// (and CRD) of their path. A purge's need nothing.
func TestNeedsOfAnOlderBackup(t *testing.T) {
	for _, tt := range []struct {
		action string
		want   int
	}{{ActionUnstick, 2}, {ActionDangling, 2}, {"purge", 0}} {
		root := t.TempDir()
		dir, err := NewBackupDir(root, "x", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		e := Entry{Key: "/registry/example.com/widgets/app/w", Value: []byte("v"), ModRevision: 4}
		if _, _, err := WriteBackup(dir, &Backup{Prefix: "/registry/", Entries: []Entry{e}}); err != nil {
			t.Fatal(err)
		}
		if err := AppendAudit(dir, tt.action, []etcdwrite.Result{{Key: e.Key, Outcome: etcdwrite.Deleted}}); err != nil {
			t.Fatal(err)
		}
		b, err := ReadBackup(dir)
		if err != nil {
			t.Fatal(err)
		}
		if got := b.NeedsOf(b.Entries[0]); len(got) != tt.want {
			t.Errorf("%s: needs %v, want %d keys", tt.action, got, tt.want)
		}
	}
}

// TestPruneKeepsWhatOnlyAVerifiedSnapshotProves: the newest backup of a
// cluster whose snapshot is truncated, missing or no longer the one it
// recorded does not count as verified: it is kept, and so is the next one,
// which becomes the newest verified; only older ones may go.
func TestPruneKeepsWhatOnlyAVerifiedSnapshotProves(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	verify := func(path string) (*SnapshotInfo, error) {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		if string(data) != "good snapshot" {
			return nil, errString("sha256 mismatch")
		}
		return &SnapshotInfo{SHA256: "abc"}, nil
	}
	for _, tt := range []struct {
		name   string
		damage func(snap string) error
		why    string
	}{
		{"truncated", func(p string) error { return os.Truncate(p, 4) }, "is 4 bytes, not the 13 recorded"},
		{"missing", os.Remove, "is missing"},
		{"damaged in place", func(p string) error { return os.WriteFile(p, []byte("bad! snapshot"), 0o600) }, "does not verify (sha256 mismatch)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			var snaps, names []string
			for _, age := range []time.Duration{10 * day, 5 * day, time.Hour} {
				dir, err := NewBackupDir(root, "x", now.Add(-age))
				if err != nil {
					t.Fatal(err)
				}
				snap := filepath.Join(dir, "snapshot.db")
				if err := os.WriteFile(snap, []byte("good snapshot"), 0o600); err != nil {
					t.Fatal(err)
				}
				b := &Backup{Created: now.Add(-age), Scope: "x", KubeSystemUID: "uid-a", Snapshot: &SnapshotInfo{Path: snap, Size: 13, SHA256: "abc"},
					Entries: []Entry{{Key: "/registry/configmaps/x/c", Value: []byte("v"), ModRevision: 5}}}
				if _, _, err := WriteBackup(dir, b); err != nil {
					t.Fatal(err)
				}
				if err := AppendAudit(dir, "purge", []etcdwrite.Result{{Key: b.Entries[0].Key, Outcome: etcdwrite.Deleted}}); err != nil {
					t.Fatal(err)
				}
				snaps, names = append(snaps, snap), append(names, filepath.Base(dir))
			}
			if err := tt.damage(snaps[2]); err != nil {
				t.Fatal(err)
			}
			plan, err := PlanPrune(root, PruneOptions{Keep: 1, Now: now, VerifySnapshot: verify})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]PruneDecision{}
			for _, d := range plan {
				got[filepath.Base(d.Path)] = d
			}
			if d := got[names[2]]; d.Remove || !strings.Contains(d.Why, tt.why) {
				t.Errorf("the newest, its snapshot %s: %+v, want kept saying %q", tt.name, d, tt.why)
			}
			if d := got[names[1]]; d.Remove || !strings.Contains(d.Why, "the newest verified backup") {
				t.Errorf("the next: %+v, want kept as the newest verified", d)
			}
			if d := got[names[0]]; !d.Remove {
				t.Errorf("the oldest: %+v, want removed", d)
			}
		})
	}
}

type errString string

func (e errString) Error() string { return string(e) }

// TestPruneLeavesABackupARestoreHolds: a backup a running restore holds
// is not removed (the prune stops there and says why), and a restore
// cannot start on a backup while a prune holds it to remove it.
func TestPruneLeavesABackupARestoreHolds(t *testing.T) {
	root := t.TempDir()
	dir, err := NewBackupDir(root, "x", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	b := &Backup{Created: time.Now(), Scope: "x", KubeSystemUID: "uid-a", Entries: []Entry{{Key: "/registry/configmaps/x/c", Value: []byte("v"), ModRevision: 5}}}
	if _, _, err := WriteBackup(dir, b); err != nil {
		t.Fatal(err)
	}
	if err := AppendAudit(dir, "purge", []etcdwrite.Result{{Key: b.Entries[0].Key, Outcome: etcdwrite.Deleted}}); err != nil {
		t.Fatal(err)
	}
	release, err := Hold(dir)
	if err != nil {
		t.Fatal(err)
	}
	plan := []PruneDecision{{Path: dir, Remove: true, Bytes: 1, audit: auditSize(dir)}}
	if freed, err := Prune(plan); err == nil || !strings.Contains(err.Error(), "a restore is using it") || freed != 0 {
		t.Errorf("Prune of a held backup: %d, %v", freed, err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the held backup was removed: %v", err)
	}
	// Two restores may read one backup at once.
	again, err := Hold(dir)
	if err != nil {
		t.Errorf("a second hold: %v", err)
	} else {
		again()
	}
	release()
	removing, err := holdToRemove(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Hold(dir); err == nil || !strings.Contains(err.Error(), "a prune is removing it") {
		t.Errorf("Hold during a prune: %v", err)
	}
	removing()
	if freed, err := Prune(plan); err != nil || freed != 1 {
		t.Errorf("Prune once released: %d, %v", freed, err)
	}
}

// TestPruneJudgesAgainUnderItsHold: a restore that ran between the plan
// and the removal (and stopped partway: its undo is needed) keeps the
// backup; the prune stops there.
func TestPruneJudgesAgainUnderItsHold(t *testing.T) {
	root := t.TempDir()
	dir, err := NewBackupDir(root, "x", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	b := &Backup{Created: time.Now(), Scope: "x", KubeSystemUID: "uid-a", Entries: []Entry{
		{Key: "/registry/configmaps/x/a", Value: []byte("v"), ModRevision: 5}, {Key: "/registry/configmaps/x/b", Value: []byte("v"), ModRevision: 5}}}
	if _, _, err := WriteBackup(dir, b); err != nil {
		t.Fatal(err)
	}
	for _, e := range b.Entries {
		if err := AppendAudit(dir, "purge", []etcdwrite.Result{{Key: e.Key, Outcome: etcdwrite.Deleted}}); err != nil {
			t.Fatal(err)
		}
	}
	plan := []PruneDecision{{Path: dir, Remove: true, Bytes: 1, audit: auditSize(dir)}}
	// The restore, after the plan: one key back, then it stopped.
	if err := AppendAudit(dir, "restore", []etcdwrite.Result{{Key: b.Entries[0].Key, Outcome: etcdwrite.Restored}}); err != nil {
		t.Fatal(err)
	}
	if _, err := Prune(plan); err == nil || !strings.Contains(err.Error(), "changed since the plan") {
		t.Errorf("Prune after a restore ran: %v, want it stopped", err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the backup an undo needs was removed: %v", err)
	}
}

// TestPruneKeepsTheNewestSnapshot: backups of dangling and unstick hold no
// snapshot; the newest backup that holds one stays whatever --keep says.
func TestPruneKeepsTheNewestSnapshot(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	root := t.TempDir()
	var names []string
	for i, withSnap := range []bool{true, true, false, false} {
		created := now.Add(-time.Duration(10-i) * time.Hour)
		dir, err := NewBackupDir(root, fmt.Sprintf("b%d", i), created)
		if err != nil {
			t.Fatal(err)
		}
		b := &Backup{Created: created, Scope: "x", KubeSystemUID: "uid-a", Entries: []Entry{{Key: "/registry/configmaps/x/c", Value: []byte("v"), ModRevision: 5}}}
		if withSnap {
			snap := filepath.Join(dir, "snapshot.db")
			if err := os.WriteFile(snap, []byte("snap"), 0o600); err != nil {
				t.Fatal(err)
			}
			b.Snapshot = &SnapshotInfo{Path: snap, Size: 4}
		}
		if _, _, err := WriteBackup(dir, b); err != nil {
			t.Fatal(err)
		}
		if err := AppendAudit(dir, "purge", []etcdwrite.Result{{Key: b.Entries[0].Key, Outcome: etcdwrite.Deleted}}); err != nil {
			t.Fatal(err)
		}
		names = append(names, filepath.Base(dir))
	}
	plan, err := PlanPrune(root, PruneOptions{Keep: 1, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	kept := map[string]string{}
	for _, d := range plan {
		if !d.Remove {
			kept[filepath.Base(d.Path)] = d.Why
		}
	}
	if !strings.Contains(kept[names[1]], "the newest verified snapshot") || !strings.Contains(kept[names[3]], "the newest verified backup") || len(kept) != 2 {
		t.Errorf("kept %v, want the newest backup and the newest with a snapshot", kept)
	}
}

// TestPruneRanksByRevisionNotClock: two control-plane nodes share the
// backup directory and one's clock runs an hour ahead. The backup taken
// last (the higher etcd revision) is the newest, whatever time it
// recorded; backups of another etcd (restored from a snapshot: a new
// cluster ID) are ranked by time.
func TestPruneRanksByRevisionNotClock(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	root := t.TempDir()
	write := func(name, etcdID string, rev int64, created time.Time) string {
		t.Helper()
		dir, err := NewBackupDir(root, name, created)
		if err != nil {
			t.Fatal(err)
		}
		b := &Backup{Created: created, Scope: name, KubeSystemUID: "uid-a", ClusterID: etcdID, ScanRevision: rev,
			Entries: []Entry{{Key: "/registry/configmaps/" + name + "/c", Value: []byte("v"), ModRevision: 5}}}
		if _, _, err := WriteBackup(dir, b); err != nil {
			t.Fatal(err)
		}
		if err := AppendAudit(dir, "purge", []etcdwrite.Result{{Key: b.Entries[0].Key, Outcome: etcdwrite.Deleted}}); err != nil {
			t.Fatal(err)
		}
		return filepath.Base(dir)
	}
	// Node 2's clock is an hour ahead: its earlier backup says a later time.
	early := write("early", "e1", 100, now.Add(30*time.Minute))
	late := write("late", "e1", 200, now.Add(-10*time.Minute))
	check := func(t *testing.T, plan []PruneDecision, keep, remove string) {
		t.Helper()
		for _, d := range plan {
			switch filepath.Base(d.Path) {
			case keep:
				if d.Remove || !strings.Contains(d.Why, "the newest verified backup") {
					t.Errorf("%s: %q, remove %v; want kept as the newest", keep, d.Why, d.Remove)
				}
			case remove:
				if !d.Remove {
					t.Errorf("%s: %q, want removed", remove, d.Why)
				}
			}
		}
	}
	plan, err := PlanPrune(root, PruneOptions{Keep: 1, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	check(t, plan, late, early)
	// A backup that recorded no revision (an older unstick's) among them:
	// one rule for all, the time, so that the order stays total.
	older := write("norev", "e1", 0, now.Add(time.Hour))
	plan, err = PlanPrune(root, PruneOptions{Keep: 1, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	check(t, plan, older, late)
}

// TestUndoLostCountsOnlyWhatAnUndoPutBack: a restore that was refused (the
// namespace created again) or conflicted undid nothing: the backup is
// still the only undo of its purge; outcomes that wrote nothing are not
// counted as written.
func TestUndoLostCountsOnlyWhatAnUndoPutBack(t *testing.T) {
	root := t.TempDir()
	for _, tt := range []struct {
		name  string
		audit []AuditRecord
		want  string
	}{
		{"a refused restore", []AuditRecord{{Action: "purge", Key: "/registry/configmaps/a/c", Outcome: etcdwrite.Deleted},
			{Action: "restore", Key: "/registry/configmaps/a/c", Outcome: etcdwrite.Refused}}, "it is the only undo of its purge of a refused restore (1 keys written)"},
		{"a conflicted restore", []AuditRecord{{Action: "purge", Key: "/registry/configmaps/a/c", Outcome: etcdwrite.Deleted},
			{Action: "restore", Key: "/registry/configmaps/a/c", Outcome: etcdwrite.Conflict}}, "it is the only undo"},
		{"a restore that put it back", []AuditRecord{{Action: "purge", Key: "/registry/configmaps/a/c", Outcome: etcdwrite.Deleted},
			{Action: "restore", Key: "/registry/configmaps/a/c", Outcome: etcdwrite.Restored}}, "its write was undone already"},
		{"a fix that changed nothing", []AuditRecord{{Action: "dangling", Key: "/registry/configmaps/a/c", Outcome: etcdwrite.TargetNotGone}}, "it records no change to undo"},
	} {
		dir, err := NewBackupDir(root, strings.ReplaceAll(tt.name, " ", "-"), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := WriteBackup(dir, &Backup{Created: time.Now(), Scope: tt.name, KubeSystemUID: "u",
			Entries: []Entry{{Key: "/registry/configmaps/a/c", Value: []byte("v"), ModRevision: 5}}}); err != nil {
			t.Fatal(err)
		}
		for _, r := range tt.audit {
			if err := AppendAudit(dir, r.Action, []etcdwrite.Result{{Key: r.Key, Outcome: r.Outcome}}); err != nil {
				t.Fatal(err)
			}
		}
		if got := undoLost(dir); !strings.Contains(got, tt.want) {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}
