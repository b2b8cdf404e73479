package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestShortDBFileIsAnError: half of a real snapshot (a copy that ran out
// of disk, a common incident artefact) makes every command that reads a
// db file say so in one line naming the file and exit 1, never die of a
// fault on the mapping with a stack trace.
func TestShortDBFileIsAnError(t *testing.T) {
	parallel(t)
	c := startCluster(t, clusterOptions{})
	dir := t.TempDir()
	whole := filepath.Join(dir, "whole.db")
	if out, errOut, code := c.regghost(t, "", "snapshot", "save", whole); code != 0 {
		t.Fatalf("snapshot save: exit %d: %s %s", code, out, errOut)
	}
	b, err := os.ReadFile(whole)
	mustNoErr(t, "read snapshot", err)
	half := filepath.Join(dir, "half.db")
	mustNoErr(t, "write half", os.WriteFile(half, b[:len(b)/2], 0o600))
	for _, args := range [][]string{
		{"scan", "--db", half, "--no-api"},
		{"space", "--db", half},
		{"ls", "--db", half},
		{"get", "--db", half, "/registry/namespaces/default"},
		{"history", "--db", half, "/registry/namespaces/default"},
		{"diff", half, whole},
		{"snapshot", "status", half},
	} {
		out, errOut, code := runBinary(t, "", args...)
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		if code != 1 || strings.Contains(errOut, "goroutine ") || strings.Contains(errOut, "fatal error") || !strings.Contains(errOut, half) {
			t.Errorf("%v: exit %d, want 1 with one line naming %s:\n%s\n%.500s", args, code, half, errOut, out)
		} else if len(lines) > 2 {
			t.Errorf("%v: %d lines on stderr, want one:\n%s", args, len(lines), errOut)
		}
	}
	out, errOut, code := c.regghost(t, "", "recover", "--snapshot", half, "-n", "default")
	if code == 0 || strings.Contains(errOut, "goroutine ") || !strings.Contains(errOut, half) {
		t.Errorf("recover --snapshot: exit %d: %s\n%.500s", code, errOut, out)
	}
}
