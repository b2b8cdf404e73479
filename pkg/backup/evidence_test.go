package backup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestEvidenceListedAndPruned: the evidence of members replace (each
// member's snapshot, a backup file with no keys naming one of them, and
// replace.json, written as pkg/members writes them) is listed by backup ls
// and pruned like any backup of its cluster, but never while its
// replacement is under way (stage "removing"): the next run takes it up
// from there. A record that says so by the time of the removal stops the
// prune (judged again under its hold).
func TestEvidenceListedAndPruned(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	root := t.TempDir()
	record := func(dir, stage string) {
		t.Helper()
		data := `{"stage": "` + stage + `", "cluster": "c1", "member": "m1", "id": "2", "peerURLs": ["http://10.0.0.2:2380"], "evidence": []}`
		if err := os.WriteFile(filepath.Join(dir, "replace.json"), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	evidence := func(age time.Duration, rev int64, stage string) string {
		t.Helper()
		dir, err := NewBackupDir(root, "members-replace-m1", now.Add(-age))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range []string{"m0", "m1", "m2"} {
			if err := os.WriteFile(filepath.Join(dir, m+".db"), []byte("snapshot of "+m), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		record(dir, stage)
		snap := &SnapshotInfo{Path: filepath.Join(dir, "m0.db"), Size: int64(len("snapshot of m0")), Revision: rev}
		if _, _, err := WriteBackup(dir, &Backup{Created: now.Add(-age), Scope: "members replace m1: the evidence", Action: "members-replace",
			ClusterID: "c1", ScanRevision: rev, Snapshot: snap}); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	day := 24 * time.Hour
	old := evidence(10*day, 100, "replaced")
	underWay := evidence(5*day, 200, "removing")
	newest := evidence(day, 300, "replaced")

	list, err := ListBackups(root)
	if err != nil || len(list) != 3 {
		t.Fatalf("ListBackups: %+v, %v", list, err)
	}
	for _, s := range list {
		want := BackupOK
		if s.Path == underWay {
			want = BackupUnfinished
		}
		if s.Status != want || s.Keys != 0 || s.SnapshotRevision == 0 || !strings.HasPrefix(s.Scope, "members replace m1") {
			t.Errorf("%s listed as %+v, want %s", s.Path, s, want)
		}
		if s.Path == underWay && !strings.Contains(s.Detail, "replacement of member m1 still under way") {
			t.Errorf("the evidence of a replacement under way: %q", s.Detail)
		}
	}

	plan, err := PlanPrune(root, PruneOptions{Keep: 1, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	why := map[string]string{old: "removed: beyond the newest verified backup of cluster c1", underWay: "kept: it is the evidence of a replacement of member m1 still under way",
		newest: "kept: the newest verified backup of cluster c1"}
	for _, d := range plan {
		if !strings.HasPrefix(d.Why, why[d.Path]) || d.Remove != (d.Path == old) {
			t.Errorf("%s: remove %v, %q; want %q", d.Path, d.Remove, d.Why, why[d.Path])
		}
	}
	if freed, err := Prune(plan); err != nil || freed <= 0 {
		t.Fatalf("Prune: %d, %v", freed, err)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("%s was not removed: %v", old, err)
	}

	// The replacement under way ended; a new one starts before the prune.
	record(underWay, "replaced")
	plan, err = PlanPrune(root, PruneOptions{Keep: 1, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	record(underWay, "removing")
	if _, err := Prune(plan); err == nil || !strings.Contains(err.Error(), "changed since the plan") {
		t.Errorf("Prune of evidence whose replacement started again: %v", err)
	}
	if _, err := os.Stat(underWay); err != nil {
		t.Errorf("%s was removed: %v", underWay, err)
	}
}
