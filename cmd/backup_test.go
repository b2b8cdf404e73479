package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdwrite"
)

// TestBackupPrune: bad flags are refused in one line; without --confirm
// nothing is removed and the plan says what would go and what it frees;
// without a terminal --yes is needed; with it only the planned backups go.
func TestBackupPrune(t *testing.T) {
	root := t.TempDir()
	now := time.Now()
	var dirs []string
	for _, age := range []time.Duration{300 * time.Hour, 200 * time.Hour, time.Hour} {
		dir, err := backup.NewBackupDir(root, "ns", now.Add(-age))
		if err != nil {
			t.Fatal(err)
		}
		e := backup.Entry{Key: "/registry/configmaps/ns/c", Value: bytes.Repeat([]byte("v"), 1<<20), ModRevision: 3}
		if _, _, err := backup.WriteBackup(dir, &backup.Backup{Created: now.Add(-age), Scope: "ns", KubeSystemUID: "uid", Entries: []backup.Entry{e}}); err != nil {
			t.Fatal(err)
		}
		if err := backup.AppendAudit(dir, "purge", []etcdwrite.Result{{Key: e.Key, Outcome: etcdwrite.Deleted}}); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	run := func(args ...string) (string, string, int) {
		var out, errOut bytes.Buffer
		code := Run(append([]string{"backup", "prune", "--backup-dir", root}, args...), strings.NewReader(""), &out, &errOut)
		return out.String(), errOut.String(), code
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--keep", "0"}, "--keep must be at least 1"},
		{[]string{"--older-than", "-1h"}, "--older-than must not be negative"},
		{[]string{"--confirm"}, "add --yes to confirm"},
	} {
		if _, errOut, code := run(append([]string{"--keep", "1", "--older-than", "100h"}, tt.args...)...); code == 0 || !strings.Contains(errOut, tt.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q, want one line with %q", tt.args, code, errOut, tt.want)
		}
	}
	exists := func() (n int) {
		for _, d := range dirs {
			if _, err := os.Stat(d); err == nil {
				n++
			}
		}
		return n
	}
	out, errOut, code := run("--keep", "1", "--older-than", "250h")
	if code != 0 || !strings.Contains(out, "Dry run: 1 backup would be removed, freeing 1.") || exists() != 3 {
		t.Fatalf("dry run: exit %d, %d backups left: %s\n%s", code, exists(), errOut, out)
	}
	out, errOut, code = run("--keep", "1", "--older-than", "250h", "--confirm", "--yes")
	if code != 0 || !strings.Contains(out, "Removed 1 backup, freeing 1.") || exists() != 2 {
		t.Fatalf("prune: exit %d, %d backups left: %s\n%s", code, exists(), errOut, out)
	}
	if _, err := os.Stat(dirs[0]); !os.IsNotExist(err) {
		t.Errorf("the oldest backup %s is still there", filepath.Base(dirs[0]))
	}
	out, _, code = run("--keep", "1", "--confirm", "--yes")
	if code != 0 || exists() != 1 {
		t.Errorf("keep 1: exit %d, %d left:\n%s", code, exists(), out)
	}
	if _, err := os.Stat(dirs[2]); err != nil {
		t.Errorf("the newest backup is gone: %v", err)
	}
}
