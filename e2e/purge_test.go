package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/snapshot"
)

// dump returns every key and value under /registry/ with the current revision.
func (c *cluster) dump(t *testing.T) (map[string][]byte, int64) {
	t.Helper()
	resp, err := c.etcd.Get(context.Background(), "/registry/", clientPrefix())
	mustNoErr(t, "dump", err)
	m := map[string][]byte{}
	for _, kv := range resp.Kvs {
		m[string(kv.Key)] = kv.Value
	}
	return m, resp.Header.Revision
}

// etcdState is every key of etcd, with its revision.
type etcdState struct {
	kvs map[string]*mvccpb.KeyValue
	rev int64
}

// state reads every key of etcd, not only the registry's (regghost's lock
// lives outside it).
func (c *cluster) state(t *testing.T) etcdState {
	t.Helper()
	resp, err := c.etcd.Get(context.Background(), "\x00", clientv3.WithFromKey())
	mustNoErr(t, "read etcd", err)
	s := etcdState{kvs: map[string]*mvccpb.KeyValue{}, rev: resp.Header.Revision}
	for _, kv := range resp.Kvs {
		s.kvs[string(kv.Key)] = kv
	}
	return s
}

// renewedByTheCluster says whether a key is one kube-apiserver and its
// controllers write on their own while a test runs: leases and lease
// candidates renewed every few seconds, and the compactor's revision.
func renewedByTheCluster(key string) bool {
	if key == "compact_rev_key" { // kube-apiserver's compactor, every 5 minutes
		return true
	}
	for _, p := range []string{"/registry/leases/", "/registry/leasecandidates/", "/registry/masterleases/", "/registry/peerserverleases/"} {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// assertUnchanged fails when anything was written to etcd since before,
// other than the leases the cluster renews on its own: no key created,
// changed or deleted. (The revision alone cannot say it: kube-apiserver
// renews its leases whatever regghost does.)
func (c *cluster) assertUnchanged(t *testing.T, what string, before etcdState) {
	t.Helper()
	now := c.state(t)
	for k, kv := range now.kvs {
		if old, ok := before.kvs[k]; (ok && old.ModRevision == kv.ModRevision) || renewedByTheCluster(k) {
			continue
		}
		t.Errorf("%s changed etcd: %s written at revision %d (etcd was at %d)", what, k, kv.ModRevision, before.rev)
	}
	for k := range before.kvs {
		if _, ok := now.kvs[k]; !ok && !renewedByTheCluster(k) {
			t.Errorf("%s changed etcd: %s deleted", what, k)
		}
	}
}

func ghostKeys(want map[string][]etcdscan.Class, ns string) []string {
	var keys []string
	for k, classes := range filterNamespace(want, ns) {
		if classes[0].Ghost() {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

func onlyBackupDir(t *testing.T, root string) string {
	t.Helper()
	entries, err := os.ReadDir(root)
	mustNoErr(t, "read backup root", err)
	if len(entries) != 1 {
		t.Fatalf("backup root %s holds %d entries, want 1", root, len(entries))
	}
	return filepath.Join(root, entries[0].Name())
}

// TestPurgeAndRestore walks the whole repair flow on a real cluster.
func TestPurgeAndRestore(t *testing.T) {
	parallel(t)
	c := startCluster(t, clusterOptions{})
	want := plantGhosts(t, c)
	ghosts := ghostKeys(want, "kb-system")
	root := filepath.Join(t.TempDir(), "backups")
	before, _ := c.dump(t)

	t.Run("dry run changes nothing", func(t *testing.T) {
		before := c.state(t)
		out, errOut, code := c.regghost(t, "", "purge", "--namespace", "kb-system", "--backup-dir", root)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		names, _, _ := c.regghost(t, "", "purge", "--namespace", "kb-system", "--backup-dir", root, "-o", "name")
		if got := strings.Fields(names); strings.Join(got, " ") != strings.Join(ghosts, " ") {
			t.Errorf("dry run -o name lists %v, want %v", got, ghosts)
		}
		if !strings.Contains(out, "Dry run: 5 keys") || !strings.Contains(out, "Nothing was changed") {
			t.Errorf("dry run output:\n%s", out)
		}
		c.assertUnchanged(t, "dry run", before)
		if _, err := os.Stat(root); !os.IsNotExist(err) {
			t.Errorf("dry run created the backup directory")
		}
	})

	var dir string
	t.Run("confirm deletes exactly the ghosts", func(t *testing.T) {
		out, errOut, code := c.regghost(t, "", "purge", "--namespace", "kb-system", "--backup-dir", root, "--confirm", "--yes")
		if code != 0 {
			t.Fatalf("exit %d: %s\n%s", code, errOut, out)
		}
		if !strings.Contains(out, "Deleted 5 of 5 planned keys") || !strings.Contains(out, "etcdutl snapshot restore") {
			t.Errorf("purge output:\n%s", out)
		}
		after, _ := c.dump(t)
		for k := range before {
			_, still := after[k]
			isGhost := contains(ghosts, k)
			if isGhost && still {
				t.Errorf("ghost %s is still in etcd", k)
			}
			if !isGhost && !still {
				t.Errorf("%s was deleted but is not a kb-system ghost", k)
			}
		}
		// The API server still serves everything else.
		pods, err := c.kube.CoreV1().Pods("healthy").List(context.Background(), metav1.ListOptions{})
		mustNoErr(t, "list healthy pods", err)
		if len(pods.Items) != 1 {
			t.Errorf("healthy has %d pods, want 1", len(pods.Items))
		}
		if _, err := c.kube.CoreV1().Pods("kb-system2").Get(context.Background(), "p1", metav1.GetOptions{}); err != nil {
			t.Errorf("kb-system2/p1 (a namespace sharing the prefix) was touched: %v", err)
		}
		dir = onlyBackupDir(t, root)
		b, err := backup.ReadBackup(dir)
		mustNoErr(t, "read backup", err)
		if b.Count != 5 {
			t.Errorf("backup holds %d keys, want 5", b.Count)
		}
		for _, e := range b.Entries {
			if !bytes.Equal(e.Value, before[e.Key]) {
				t.Errorf("backup of %s is not the stored bytes", e.Key)
			}
		}
		snap := filepath.Join(dir, snapshot.SnapshotFile)
		if _, _, code := runBinary(t, "", "snapshot", "status", snap); code != 0 {
			t.Errorf("regghost snapshot status %s failed", snap)
		}
		if out, err := exec.Command(bins.etcdutl, "snapshot", "status", snap, "-w", "json").CombinedOutput(); err != nil {
			t.Errorf("etcdutl snapshot status: %v: %s", err, out)
		}
		audit, err := os.ReadFile(filepath.Join(dir, backup.AuditFile))
		mustNoErr(t, "read audit log", err)
		if n := strings.Count(string(audit), `"outcome":"deleted"`); n != 5 {
			t.Errorf("audit log has %d deletes, want 5:\n%s", n, audit)
		}
	})

	t.Run("the printed disaster command restores the snapshot", func(t *testing.T) {
		dataDir := filepath.Join(t.TempDir(), "restored")
		out, err := exec.Command(bins.etcdutl, "snapshot", "restore", filepath.Join(dir, snapshot.SnapshotFile),
			"--data-dir", dataDir, "--bump-revision", "1000000000", "--mark-compacted").CombinedOutput()
		if err != nil {
			t.Errorf("etcdutl snapshot restore: %v: %s", err, out)
		}
	})

	t.Run("restore dry run then confirm puts the bytes back", func(t *testing.T) {
		out, errOut, code := c.regghost(t, "", "restore", dir)
		if code != 0 || !strings.Contains(out, "Dry run: 5 of 5 keys would be restored") {
			t.Fatalf("restore dry run exit %d: %s\n%s", code, errOut, out)
		}
		for _, k := range ghosts {
			if c.value(t, k) != nil {
				t.Fatalf("restore dry run wrote %s", k)
			}
		}
		out, errOut, code = c.regghost(t, "", "restore", dir, "--confirm", "--yes")
		if code != 0 || !strings.Contains(out, "Restored 5 keys") {
			t.Fatalf("restore exit %d: %s\n%s", code, errOut, out)
		}
		for _, k := range ghosts {
			if !bytes.Equal(c.value(t, k), before[k]) {
				t.Errorf("%s is not byte-identical after restore", k)
			}
		}
		// Twice is harmless.
		out, _, code = c.regghost(t, "", "restore", dir, "--confirm", "--yes")
		if code != 0 || !strings.Contains(out, "Nothing to restore") {
			t.Errorf("second restore exit %d:\n%s", code, out)
		}
	})

	t.Run("restore leaves a key that was recreated differently", func(t *testing.T) {
		k := "/registry/configmaps/kb-system/cm1"
		c.forceDelete(t, k)
		c.put(t, k, []byte("someone else's value"))
		out, errOut, code := c.regghost(t, "", "restore", dir, "--confirm", "--yes")
		if code != 1 || !strings.Contains(out, "conflict") || !strings.Contains(errOut, "not restored") {
			t.Errorf("exit %d: %s\n%s", code, errOut, out)
		}
		if string(c.value(t, k)) != "someone else's value" {
			t.Errorf("restore overwrote %s", k)
		}
	})
}

// TestPurgeSkipsKeysChangedSinceTheReviewedScan plays a concurrent writer
// between the scan the user reviewed and the purge.
func TestPurgeSkipsKeysChangedSinceTheReviewedScan(t *testing.T) {
	parallel(t)
	c := startCluster(t, clusterOptions{})
	want := plantGhosts(t, c)
	plan, _, code := c.regghost(t, "", "scan", "--namespace", "kb-system", "-o", "json")
	if code != 3 {
		t.Fatalf("scan exit %d", code)
	}
	planFile := filepath.Join(t.TempDir(), "plan.json")
	mustNoErr(t, "write plan", os.WriteFile(planFile, []byte(plan), 0o600))

	changed := "/registry/pods/kb-system/p2"
	newValue := append(c.value(t, changed), []byte{}...)
	c.put(t, changed, newValue) // same bytes, new mod revision

	root := t.TempDir()
	out, errOut, code := c.regghost(t, "", "purge", "--namespace", "kb-system", "--from", planFile, "--backup-dir", root, "--confirm", "--yes")
	if code != 3 || !strings.Contains(errOut, "deleted 4 of 5 planned keys") {
		t.Fatalf("exit %d: %s\n%s", code, errOut, out)
	}
	if !strings.Contains(out, changed) || !strings.Contains(out, "changed since the reviewed scan") {
		t.Errorf("the changed key is not reported as skipped:\n%s", out)
	}
	if c.value(t, changed) == nil {
		t.Fatalf("%s changed after the reviewed scan but was deleted", changed)
	}
	for _, k := range ghostKeys(want, "kb-system") {
		if k != changed && c.value(t, k) != nil {
			t.Errorf("%s was not deleted", k)
		}
	}
}

// TestPurgeRefusals checks every guard refuses, with nothing written to
// etcd or to the backup directory.
func TestPurgeRefusals(t *testing.T) {
	parallel(t)
	c := startCluster(t, clusterOptions{})
	plantGhosts(t, c)
	before := c.state(t)
	fileInTheWay := filepath.Join(t.TempDir(), "file")
	mustNoErr(t, "write", os.WriteFile(fileInTheWay, []byte("x"), 0o600))

	tests := []struct {
		name    string
		args    []string
		code    int
		wantErr string
	}{
		{name: "no scope", args: []string{"--confirm", "--yes"}, code: 2, wantErr: "purge needs --namespace or exact keys"},
		{name: "prefix as key", args: []string{"/registry/pods/", "--confirm", "--yes"}, code: 1, wantErr: "not the key of one object"},
		{name: "namespace-wide prefix as key", args: []string{"/registry/pods/kb-system/", "--confirm", "--yes"}, code: 1, wantErr: "not the key of one object"},
		{name: "live object", args: []string{"/registry/pods/healthy/web", "--confirm", "--yes"}, code: 1, wantErr: "is not a ghost"},
		{name: "existing namespace object", args: []string{"/registry/namespaces/healthy", "--confirm", "--yes"}, code: 1, wantErr: "is not a ghost"},
		{name: "suspect without force-class", args: []string{"/registry/pods/mixed/stuck", "--terminating-after", "1ns", "--confirm", "--yes"}, code: 1, wantErr: "`regghost unstick namespace mixed` ends that through the API server; to delete it from etcd anyway, skipping what its finalizers guard, add --force-class stuck-terminating"},
		{name: "force-class of a ghost class", args: []string{"--namespace", "kb-system", "--force-class", "orphaned-namespace", "--confirm", "--yes"}, code: 2, wantErr: "which only admits suspects"},
		{name: "unknown class", args: []string{"--namespace", "kb-system", "--force-class", "everything", "--confirm", "--yes"}, code: 2, wantErr: "is not a class"},
		{name: "invalid namespace", args: []string{"--namespace", "kb-system/", "--confirm", "--yes"}, code: 2, wantErr: "not a valid namespace name"},
		{name: "no terminal and no --yes", args: []string{"--namespace", "kb-system", "--confirm"}, code: 2, wantErr: "add --yes"},
		{name: "unwritable backup path", args: []string{"--namespace", "kb-system", "--confirm", "--yes", "--backup-dir", filepath.Join(fileInTheWay, "backups")}, code: 1, wantErr: "create backup directory"},
		{name: "batch too large", args: []string{"--namespace", "kb-system", "--confirm", "--yes", "--batch-size", "500"}, code: 2, wantErr: "--batch-size"},
		{name: "reviewed scan is not a report", args: []string{"--namespace", "kb-system", "--from", fileInTheWay, "--confirm", "--yes"}, code: 1, wantErr: "is not a `regghost scan -o json` report"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"purge"}, tt.args...)
			hasDir := false
			for _, a := range tt.args {
				hasDir = hasDir || a == "--backup-dir"
			}
			root := filepath.Join(t.TempDir(), "backups")
			if !hasDir {
				args = append(args, "--backup-dir", root)
			}
			_, errOut, code := c.regghost(t, "", args...)
			if code != tt.code || !strings.Contains(errOut, tt.wantErr) {
				t.Errorf("exit %d, want %d; stderr %q, want it to contain %q", code, tt.code, errOut, tt.wantErr)
			}
			if strings.Count(strings.TrimSpace(etcdtest.WithoutUsing(errOut)), "\n") > 0 {
				t.Errorf("error is more than one line: %q", errOut)
			}
			if _, err := os.Stat(root); !os.IsNotExist(err) {
				entries, _ := os.ReadDir(root)
				if len(entries) > 0 {
					t.Errorf("refused purge left %d entries in the backup directory", len(entries))
				}
			}
		})
	}
	c.assertUnchanged(t, "a refused purge", before)
}

// TestPurgeRefusesWhenTheBackupDiskIsFull mounts a 64 KiB tmpfs as the
// backup directory: the snapshot cannot fit, so nothing may be deleted.
func TestPurgeRefusesWhenTheBackupDiskIsFull(t *testing.T) {
	parallel(t)
	mnt := t.TempDir()
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=64k"); err != nil {
		t.Skipf("cannot mount a tmpfs here (needs root): %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(mnt, 0) })
	c := startCluster(t, clusterOptions{})
	plantGhosts(t, c)
	before := c.state(t)
	_, errOut, code := c.regghost(t, "", "purge", "--namespace", "kb-system", "--backup-dir", mnt, "--confirm", "--yes")
	if code != 1 || !strings.Contains(errOut, "no room for the snapshot and backup") || !strings.Contains(errOut, "nothing was changed") {
		t.Errorf("exit %d: %s", code, errOut)
	}
	c.assertUnchanged(t, "purge onto a full disk", before)
	entries, _ := os.ReadDir(mnt)
	if len(entries) != 0 {
		t.Errorf("full-disk purge left %d entries behind", len(entries))
	}
}

// TestRestoreRefusesDamagedBackups checks corrupt and truncated backups are refused.
func TestRestoreRefusesDamagedBackups(t *testing.T) {
	parallel(t)
	c := startCluster(t, clusterOptions{})
	plantGhosts(t, c)
	root := t.TempDir()
	if _, errOut, code := c.regghost(t, "", "purge", "--namespace", "kb-system", "--backup-dir", root, "--confirm", "--yes"); code != 0 {
		t.Fatalf("purge: exit %d: %s", code, errOut)
	}
	dir := onlyBackupDir(t, root)
	good, err := os.ReadFile(filepath.Join(dir, backup.BackupFile))
	mustNoErr(t, "read backup", err)
	var b backup.Backup
	mustNoErr(t, "decode backup", json.Unmarshal(good, &b))
	b.Entries[0].Value = append(b.Entries[0].Value, 'x')
	tampered, _ := json.Marshal(b)

	for name, data := range map[string][]byte{
		"truncated": good[:len(good)/2],
		"tampered":  tampered,
		"empty":     {},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "backup.json")
			mustNoErr(t, "write", os.WriteFile(path, data, 0o600))
			// The keyspace, not the revision: kube-apiserver renews its
			// own lease meanwhile.
			before := c.state(t)
			_, errOut, code := c.regghost(t, "", "restore", path, "--confirm", "--yes")
			if code != 1 || !strings.Contains(errOut, "backup is corrupt") || !strings.Contains(errOut, "nothing was restored") {
				t.Errorf("exit %d: %s", code, errOut)
			}
			c.assertUnchanged(t, "a refused restore", before)
		})
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
