package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/regghost/regghost/pkg/snapshot"
)

// startKine runs kine over SQLite with TLS and client certificates, the
// way k3s serves the etcd API when it runs without etcd.
func (c *cluster) startKine(t *testing.T) {
	t.Helper()
	c.etcdURL = fmt.Sprintf("https://127.0.0.1:%d", freePort(t))
	proc := startProcess(t, "kine", filepath.Join(c.dir, "kine.log"), bins.kine,
		"--listen-address", c.etcdURL,
		"--endpoint", "sqlite://"+filepath.Join(c.dir, "state.db")+"?_journal=WAL&cache=shared&_busy_timeout=30000&_txlock=immediate",
		"--server-cert-file", c.pki.ServerCert, "--server-key-file", c.pki.ServerKey, "--trusted-ca-file", c.pki.CA,
		"--metrics-bind-address", "0")
	cli := c.etcdClient(t, c.etcdURL)
	c.etcd = cli
	waitFor(t, 90*time.Second, "kine ready", func() error {
		if proc.exited() {
			t.Fatalf("kine exited: %v (see its log)", proc.cmd.ProcessState)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := cli.Get(ctx, "/registry/health")
		return err
	})
}

// TestKine: on kine over SQLite, scan finds the ghosts, purge takes a
// logical snapshot (kine has no snapshot RPC) and deletes with the one-key
// transactions kine serves, restore puts every key back byte-identical, and
// the logical snapshot verifies and restores a key on its own.
func TestKine(t *testing.T) {
	parallel(t)
	c := startCluster(t, clusterOptions{kine: true})
	want := plantGhosts(t, c)
	rep, code := c.scanJSON(t, "--terminating-after", "1ns")
	assertFindings(t, rep, want)
	if code != 3 {
		t.Errorf("scan exit %d", code)
	}
	// More keys than one page, before and after the registry prefix, so
	// the logical snapshot has to page through all of them.
	for i := range 600 {
		c.put(t, fmt.Sprintf("/%s-filler/%04d", []string{"aa", "zz"}[i%2], i), []byte("x"))
	}
	before, _ := c.dump(t)
	ghosts := ghostKeys(want, "kb-system")
	root := filepath.Join(t.TempDir(), "backups")
	out, errOut, code := c.regghost(t, "", "purge", "-n", "kb-system", "--backup-dir", root, "--confirm", "--yes")
	if code != 0 || !strings.Contains(out, "Deleted 5 of 5 planned keys") || !strings.Contains(out, "logical snapshot (kine has no snapshot RPC)") {
		t.Fatalf("purge: exit %d: %s\n%s", code, errOut, out)
	}
	if !strings.Contains(oneLine(errOut), "kine has no leases to keep regghost's lock alive") {
		t.Errorf("purge did not say it runs without the lock: %s", errOut)
	}
	dir := onlyBackupDir(t, root)
	snap := filepath.Join(dir, snapshot.LogicalSnapshotFile)
	if !strings.Contains(out, "regghost snapshot restore "+snap+" --confirm") {
		t.Errorf("the disaster path does not name the logical snapshot:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, snapshot.SnapshotFile)); err == nil {
		t.Error("an etcd snapshot file was written from kine")
	}
	for _, k := range ghosts {
		if c.value(t, k) != nil {
			t.Errorf("%s is still in kine", k)
		}
	}
	if out, errOut, code := c.regghost(t, "", "snapshot", "status", snap); code != 0 || !strings.Contains(out, "logical snapshot") {
		t.Errorf("snapshot status: exit %d: %s%s", code, out, errOut)
	}
	// The logical snapshot holds the whole keyspace, not one page of it.
	_, entries, err := snapshot.ReadLogical(snap)
	mustNoErr(t, "read the logical snapshot", err)
	inSnap := map[string]bool{}
	for _, e := range entries {
		inSnap[e.Key] = true
	}
	for i := range 600 {
		if k := fmt.Sprintf("/%s-filler/%04d", []string{"aa", "zz"}[i%2], i); !inSnap[k] {
			t.Fatalf("the logical snapshot (%d keys) lacks %s", len(entries), k)
		}
	}
	for k := range before {
		if !inSnap[k] && !strings.HasPrefix(k, "/registry/masterleases/") && !strings.HasPrefix(k, "/registry/events/") {
			t.Errorf("the logical snapshot (%d keys) lacks %s", len(entries), k)
		}
	}
	if _, errOut, code := c.regghost(t, "", "restore", dir, "--confirm", "--yes"); code != 0 {
		t.Fatalf("restore: exit %d: %s", code, errOut)
	}
	for _, k := range ghosts {
		if !bytes.Equal(c.value(t, k), before[k]) {
			t.Errorf("%s is not byte-identical after restore", k)
		}
	}

	// The logical snapshot alone brings a key back, and only what is absent.
	key := ghosts[0]
	c.forceDelete(t, key)
	out, errOut, code = c.regghost(t, "", "snapshot", "restore", snap, "--key-prefix", key)
	if code != 0 || !strings.Contains(out, "Dry run: 1 of 1 key would be restored") || c.value(t, key) != nil {
		t.Fatalf("snapshot restore dry run: exit %d: %s%s", code, out, errOut)
	}
	out, errOut, code = c.regghost(t, "", "snapshot", "restore", snap, "--confirm", "--yes")
	if code != 0 || !strings.Contains(out, "Restored 1 key,") {
		t.Fatalf("snapshot restore: exit %d: %s%s", code, out, errOut)
	}
	if !bytes.Equal(c.value(t, key), before[key]) {
		t.Errorf("%s is not byte-identical after snapshot restore", key)
	}

	// snapshot save takes a logical snapshot from kine too; an etcd
	// snapshot file is refused by snapshot restore with the right command.
	c.createConfigMap(t, "default", "settings")
	settings := "/registry/configmaps/default/settings"
	settingsBefore := c.value(t, settings)
	saved := filepath.Join(t.TempDir(), "kine.jsonl")
	if out, errOut, code := c.regghost(t, "", "snapshot", "save", saved); code != 0 || !strings.Contains(out, "logical snapshot") {
		t.Errorf("snapshot save: exit %d: %s%s", code, out, errOut)
	}
	// recover brings one object back from it, through kine's one-key
	// transactions.
	mustNoErr(t, "delete configmap", c.kube.CoreV1().ConfigMaps("default").Delete(context.Background(), "settings", metav1.DeleteOptions{}))
	recRoot := filepath.Join(t.TempDir(), "b")
	if out, errOut, code := c.regghost(t, "", "recover", "--snapshot", saved, settings, "--backup-dir", recRoot, "--confirm", "--yes"); code != 0 || !strings.Contains(out, "Recovered 1 of 1 object") {
		t.Errorf("recover from the logical snapshot: exit %d: %s%s", code, out, errOut)
	}
	if !bytes.Equal(c.value(t, settings), settingsBefore) {
		t.Errorf("%s is not byte-identical after recover", settings)
	}
	// The recovery is undone on kine too: restore of its backup deletes what
	// it wrote in kine's one-key transaction shape.
	if out, errOut, code := c.regghost(t, "", "restore", onlyBackupDir(t, recRoot), "--confirm", "--yes"); code != 0 || c.value(t, settings) != nil {
		t.Errorf("undo of the recovery on kine: exit %d, key left %v: %s%s", code, c.value(t, settings) != nil, out, errOut)
	}
	notLogical := filepath.Join(t.TempDir(), "snapshot.db")
	mustNoErr(t, "write", os.WriteFile(notLogical, []byte("not a logical snapshot"), 0o600))
	if _, errOut, code := c.regghost(t, "", "snapshot", "restore", notLogical); code == 0 || !strings.Contains(errOut, "etcdutl snapshot restore") {
		t.Errorf("snapshot restore of an etcd snapshot: exit %d: %s", code, errOut)
	}
}
