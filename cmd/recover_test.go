package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/internal/etcdtest"
)

// TestRecoverRefusesBadInput: every malformed recover is one line on
// stderr and a non-zero exit, with etcd untouched and no backup directory.
func TestRecoverRefusesBadInput(t *testing.T) {
	cli, ep, db := goldenSnapshot(t)
	ctx := context.Background()
	notDB := filepath.Join(t.TempDir(), "not.db")
	if err := os.WriteFile(notDB, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no source", []string{"-n", "kb-system"}, ExitUsage, "give exactly one source"},
		{"two sources", []string{"--snapshot", db, "--rev", "3"}, ExitUsage, "give exactly one source"},
		{"negative revision", []string{"--rev", "-3"}, ExitUsage, "--rev must be positive"},
		{"no wait for CRDs", []string{"--snapshot", db, "--wait", "0s"}, ExitUsage, "--wait must be positive"},
		{"manifests and confirm", []string{"--snapshot", db, "-o", "yaml", "--confirm"}, ExitUsage, "prints manifests and writes nothing"},
		{"bad selector", []string{"--snapshot", db, "-l", "a in (b"}, ExitUsage, "--selector"},
		{"unknown impact", []string{"--snapshot", db, "--accept-impact", "everything"}, ExitUsage, "is not an impact of recover"},
		{"key outside the registry", []string{"--snapshot", db, "/other/key"}, ExitUsage, "is not under the registry prefix"},
		{"bad namespace", []string{"--snapshot", db, "-n", "Not_A_Namespace"}, ExitUsage, "namespace"},
		{"not a snapshot", []string{"--snapshot", notDB, "--confirm", "--yes"}, ExitError, "not a readable etcd database"},
		{"a key the snapshot lacks", []string{"--snapshot", db, "/registry/secrets/kb-system/nope", "--confirm", "--yes"}, ExitError, "is not in the source"},
		{"nothing matches", []string{"--snapshot", db, "-n", "no-such-namespace", "--confirm", "--yes"}, ExitError, "nothing in snapshot"},
		{"revision ahead", []string{"--rev", "999999", "--confirm", "--yes"}, ExitError, "is ahead of etcd's current revision"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, err := cli.Get(ctx, "\x00", clientv3.WithFromKey(), clientv3.WithCountOnly())
			if err != nil {
				t.Fatal(err)
			}
			root := filepath.Join(t.TempDir(), "backups")
			var out, errOut bytes.Buffer
			args := append(append([]string{"recover"}, tt.args...), "--endpoints", ep, "--no-api", "--backup-dir", root)
			code := Run(args, strings.NewReader(""), &out, &errOut)
			// The lines saying what is used and what the snapshot file
			// is may come first.
			msg := etcdtest.WithoutUsing(errOut.String())
			if strings.HasPrefix(msg, "regghost: db file ") {
				if i := strings.Index(msg, "\nregghost: "); i >= 0 {
					msg = msg[i+1:]
				}
			}
			if code != tt.code || !strings.Contains(msg, tt.want) || strings.Count(strings.TrimSpace(msg), "\n") > 0 {
				t.Errorf("exit %d (want %d), stderr %q (want one line with %q)", code, tt.code, errOut.String(), tt.want)
			}
			after, err := cli.Get(ctx, "\x00", clientv3.WithFromKey(), clientv3.WithCountOnly())
			if err != nil {
				t.Fatal(err)
			}
			if after.Header.Revision != before.Header.Revision {
				t.Errorf("etcd changed: revision %d -> %d", before.Header.Revision, after.Header.Revision)
			}
			if _, err := os.Stat(root); !os.IsNotExist(err) {
				t.Errorf("the backup directory was created")
			}
		})
	}
}

// shopGoneSince is the golden cluster with every key of namespace shop
// deleted since its snapshot db was taken: its endpoint and the snapshot.
func shopGoneSince(t *testing.T) (ep, db string) {
	t.Helper()
	cli, ep, db := goldenSnapshot(t)
	ctx := context.Background()
	resp, err := cli.Get(ctx, "/registry/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range resp.Kvs {
		if strings.Contains(string(kv.Key), "/shop/") {
			if _, err := cli.Delete(ctx, string(kv.Key)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return ep, db
}

// TestRecoverThatLeavesPartExitsNonZero: a confirmed recover that writes
// what it can and leaves what its plan refused exits 1, as its dry run
// does: part of what was selected is not back.
func TestRecoverThatLeavesPartExitsNonZero(t *testing.T) {
	ep, db := shopGoneSince(t)
	var out, errOut bytes.Buffer
	args := []string{"recover", "--snapshot", db, "-n", "shop", "--accept-impact", "containers-started", "--confirm", "--yes", "--endpoints", ep, "--no-api", "--backup-dir", filepath.Join(t.TempDir(), "b")}
	code := Run(args, strings.NewReader(""), &out, &errOut)
	if code != ExitError || !strings.Contains(errOut.String(), "some objects are refused") || !strings.Contains(out.String(), "Wrote") && !strings.Contains(out.String(), "wrote") {
		t.Errorf("exit %d\n%s%s", code, errOut.String(), out.String())
	}
}

// TestRecoverManifestsThatLeavePartExitNonZero: -o yaml that leaves out an
// object recover refuses exits 1 as the write would, after printing the
// rest; what it leaves out is said on stderr.
func TestRecoverManifestsThatLeavePartExitNonZero(t *testing.T) {
	ep, db := shopGoneSince(t)
	var out, errOut bytes.Buffer
	code := Run([]string{"recover", "--snapshot", db, "-n", "shop", "-o", "yaml", "--endpoints", ep, "--no-api"}, strings.NewReader(""), &out, &errOut)
	if code != ExitError || !strings.Contains(errOut.String(), "refused and left out of the manifests") || !strings.Contains(out.String(), "kind: List") {
		t.Errorf("exit %d\n%s%s", code, errOut.String(), out.String())
	}
}

// TestUndoRecoveryPrintsWhatOAsks: restore of a recovery's backup with
// --confirm and -o json prints one JSON document on stdout (what it
// deleted) and its plan on stderr, as every writing command does; text
// never mixes into the document.
func TestUndoRecoveryPrintsWhatOAsks(t *testing.T) {
	ep, db := shopGoneSince(t)
	var out, errOut bytes.Buffer
	Run([]string{"recover", "--snapshot", db, "-n", "shop", "--accept-impact", "containers-started", "--confirm", "--yes", "--endpoints", ep, "--no-api", "--backup-dir", filepath.Join(t.TempDir(), "b")}, strings.NewReader(""), &out, &errOut)
	_, undo, ok := strings.Cut(out.String(), "regghost restore ")
	dir, _, _ := strings.Cut(undo, " ")
	if !ok || dir == "" {
		t.Fatalf("no undo command in the recovery's output:\n%s%s", errOut.String(), out.String())
	}
	out.Reset()
	errOut.Reset()
	code := Run([]string{"restore", dir, "--confirm", "--yes", "-o", "json", "--endpoints", ep, "--no-api"}, strings.NewReader(""), &out, &errOut)
	var doc struct {
		DryRun  bool             `json:"dryRun"`
		Undo    string           `json:"undo"`
		Results []map[string]any `json:"results"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil || doc.DryRun || doc.Undo != "recover" || len(doc.Results) == 0 {
		t.Fatalf("exit %d: stdout is not the undo's document (%v):\n%s\nstderr:\n%s", code, err, out.String(), errOut.String())
	}
	if code != ExitOK || !strings.Contains(errOut.String(), "/registry/") {
		t.Errorf("exit %d, want %d and the plan on stderr:\n%s", code, ExitOK, errOut.String())
	}
}
