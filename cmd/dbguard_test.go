package cmd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/snapshot"
)

// TestWritersRefuseADBFile: --db reads a file offline; purge, and unstick
// with --confirm, write to the live cluster, so they refuse it with one line
// and exit code 2, before anything is read or written. The file here holds
// the same ghosts as the live etcd: without the refusal, purge would delete
// live keys on the file's verdict.
func TestWritersRefuseADBFile(t *testing.T) {
	cli, ep, db := goldenSnapshot(t)
	ctx := context.Background()
	tests := []struct {
		name string
		args []string
	}{
		{name: "purge", args: []string{"purge", "-n", "kb-system", "--accept-single-witness", "--confirm", "--yes"}},
		{name: "purge dry run", args: []string{"purge", "-n", "kb-system"}},
		{name: "unstick --confirm", args: []string{"unstick", "namespace", "shop", "--confirm", "--yes"}},
		// restore and snapshot restore write to the live cluster too, and
		// --db would only mean the flags point elsewhere than intended.
		{name: "restore", args: []string{"restore", filepath.Join(t.TempDir(), "any-backup"), "--confirm", "--yes"}},
		{name: "snapshot restore", args: []string{"snapshot", "restore", filepath.Join(t.TempDir(), "snapshot.jsonl"), "--confirm", "--yes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, err := cli.Get(ctx, "\x00", clientv3.WithFromKey(), clientv3.WithCountOnly())
			if err != nil {
				t.Fatal(err)
			}
			root := filepath.Join(t.TempDir(), "backups")
			var out, errOut bytes.Buffer
			args := append(append([]string{}, tt.args...), "--db", db, "--endpoints", ep, "--no-api")
			if tt.args[0] == "purge" || tt.args[0] == "unstick" {
				args = append(args, "--backup-dir", root)
			}
			code := Run(args, strings.NewReader(""), &out, &errOut)
			if code != ExitUsage || !strings.Contains(errOut.String(), "--db "+db+" reads a file offline") || strings.Count(strings.TrimSpace(errOut.String()), "\n") > 0 {
				t.Errorf("exit %d, stderr %q", code, errOut.String())
			}
			after, err := cli.Get(ctx, "\x00", clientv3.WithFromKey(), clientv3.WithCountOnly())
			if err != nil {
				t.Fatal(err)
			}
			if after.Header.Revision != before.Header.Revision || after.Count != before.Count {
				t.Errorf("etcd changed: revision %d -> %d, %d -> %d keys", before.Header.Revision, after.Header.Revision, before.Count, after.Count)
			}
			if _, err := os.Stat(root); !os.IsNotExist(err) {
				t.Errorf("the backup directory was created")
			}
		})
	}
}

// goldenSnapshot starts an etcd holding the golden ghosts and saves a
// snapshot of it.
func goldenSnapshot(t *testing.T) (*clientv3.Client, string, string) {
	t.Helper()
	cli, ep := etcdtest.Start(t)
	plantGolden(t, cli)
	db := filepath.Join(t.TempDir(), "snapshot.db")
	if _, err := snapshot.SaveSnapshot(context.Background(), clientv3.Config{Endpoints: []string{ep}}, db); err != nil {
		t.Fatal(err)
	}
	return cli, ep, db
}
