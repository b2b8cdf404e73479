package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/regghost/regghost/internal/etcdtest"
)

// TestSpaceReclaimRefusesBadInput: bad flags, --db (reclaim acts on the
// live cluster) and a --confirm nobody can answer end in one line, exit
// code 2 (an argument: cobra's 1, as for every command), and nothing written.
func TestSpaceReclaimRefusesBadInput(t *testing.T) {
	_, ep := etcdtest.Start(t)
	db := filepath.Join(t.TempDir(), "some.db")
	for _, tc := range []struct {
		name string
		args []string
		want string
		code int
	}{
		{"--db", []string{"--db", db, "--confirm", "--yes"}, "--db " + db + " reads a file offline, and space reclaim writes to the live cluster", ExitUsage},
		{"a zero quota", []string{"--quota-backend-bytes", "0"}, "--quota-backend-bytes must not be 0", ExitUsage},
		{"no wait", []string{"--wait", "0s"}, "--wait must be positive", ExitUsage},
		{"a bad --data-dir", []string{"--data-dir", "=/var/lib/etcd"}, `--data-dir "=/var/lib/etcd": want NAME=DIR or DIR`, ExitUsage},
		{"an argument", []string{"now"}, `unknown command "now"`, ExitUsage},
		{"a bad output", []string{"-o", "xml"}, `--output "xml"`, ExitUsage},
		{"no terminal and no --yes", []string{"--confirm"}, "stdin is not a terminal, so nobody can be asked: add --yes", ExitUsage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "backups")
			var out, errOut bytes.Buffer
			args := append(append([]string{"space", "reclaim"}, tc.args...), "--endpoints", ep, "--no-api", "--backup-dir", root, "--node-root", t.TempDir())
			code := Run(args, strings.NewReader(""), &out, &errOut)
			if code != tc.code || !strings.Contains(errOut.String(), tc.want) || strings.Count(strings.TrimSpace(etcdtest.WithoutUsing(errOut.String())), "\n") > 0 {
				t.Errorf("exit %d, stderr %q, want %q", code, errOut.String(), tc.want)
			}
			if _, err := os.Stat(root); !os.IsNotExist(err) {
				t.Errorf("the backup directory was written: %v", err)
			}
		})
	}
}
