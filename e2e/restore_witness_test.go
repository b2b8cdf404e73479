package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/flagnames"
	"github.com/regghost/regghost/pkg/snapshot"
)

// restoreOutcomes runs a restore command with -o json and returns each key's
// outcome and detail, with the exit code and stderr.
func (c *cluster) restoreOutcomes(t *testing.T, args ...string) (map[string]etcdwrite.Result, string, int) {
	t.Helper()
	out, errOut, code := c.regghost(t, "", append(args, "-o", "json")...)
	var doc struct {
		Results []etcdwrite.Result `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v: exit %d, output is not JSON: %v\n%s\n%s", args, code, err, out, errOut)
	}
	m := map[string]etcdwrite.Result{}
	for _, r := range doc.Results {
		m[r.Key] = r
	}
	return m, errOut, code
}

// assertRefused checks that every key was refused because namespace
// kb-system was created again, and that stderr says so in one line naming
// the flag.
func assertRefused(t *testing.T, what string, got map[string]etcdwrite.Result, keys []string, errOut string, code int) {
	t.Helper()
	if code != 1 {
		t.Errorf("%s: exit %d, want 1", what, code)
	}
	for _, k := range keys {
		r := got[k]
		if r.Outcome != etcdwrite.Refused || !strings.Contains(r.Detail, "namespace kb-system (/registry/namespaces/kb-system, create revision") ||
			!strings.Contains(r.Detail, "was created again since the purge") || !strings.Contains(r.Detail, flagnames.IntoRecreated) {
			t.Errorf("%s: %s: %s (%s), want refused: namespace kb-system created again, naming %s", what, k, r.Outcome, r.Detail, flagnames.IntoRecreated)
		}
	}
	if !strings.Contains(errOut, "were refused, not restored") || !strings.Contains(errOut, flagnames.IntoRecreated) || strings.Count(strings.TrimSpace(etcdtest.WithoutUsing(errOut)), "\n") > 0 {
		t.Errorf("%s: stderr %q, want one line: refused, naming %s", what, errOut, flagnames.IntoRecreated)
	}
}

// TestRestoreRefusesARecreatedNamespace plays the resurrected incident
// regghost itself would make: kb-system's namespace key was force-deleted,
// purge removed its ghosts, then someone created kb-system again through
// the API. Restoring the backup would put the old objects into the new
// namespace; restore refuses every one of them, dry run and confirmed, exits
// 1 and writes nothing, until --into-recreated asks for it. A stuck pod in a
// namespace that was there all along restores as before.
func TestRestoreRefusesARecreatedNamespace(t *testing.T) {
	parallel(t)
	c := startCluster(t, clusterOptions{})
	want := plantGhosts(t, c)
	ghosts := ghostKeys(want, "kb-system")
	before, _ := c.dump(t)
	root := filepath.Join(t.TempDir(), "backups")
	if out, errOut, code := c.regghost(t, "", "purge", "-n", "kb-system", "--backup-dir", root, "--confirm", "--yes"); code != 0 {
		t.Fatalf("purge: exit %d: %s\n%s", code, errOut, out)
	}
	dir := onlyBackupDir(t, root)
	c.createNamespace(t, "kb-system")

	t.Run("dry run shows the refusals", func(t *testing.T) {
		state := c.state(t)
		got, errOut, code := c.restoreOutcomes(t, "restore", dir)
		assertRefused(t, "dry run", got, ghosts, errOut, code)
		out, _, _ := c.regghost(t, "", "restore", dir)
		if !strings.Contains(out, "Refused 5 keys") || !strings.Contains(out, flagnames.IntoRecreated+" writes them into one that exists") {
			t.Errorf("dry run table:\n%s", out)
		}
		c.assertUnchanged(t, "a restore dry run", state)
	})

	t.Run("confirmed restore refuses and writes nothing", func(t *testing.T) {
		state := c.state(t)
		got, errOut, code := c.restoreOutcomes(t, "restore", dir, "--confirm", "--yes")
		assertRefused(t, "restore --confirm", got, ghosts, errOut, code)
		c.assertUnchanged(t, "a refused restore", state)
		for _, k := range ghosts {
			if c.value(t, k) != nil {
				t.Errorf("%s was written into the new namespace", k)
			}
		}
	})

	t.Run("--into-recreated writes them", func(t *testing.T) {
		out, errOut, code := c.regghost(t, "", "restore", dir, "--confirm", "--yes", flagnames.IntoRecreated)
		if code != 0 || !strings.Contains(out, "Restored 5 keys") || !strings.Contains(out, "as "+flagnames.IntoRecreated+" asks") {
			t.Fatalf("exit %d: %s\n%s", code, errOut, out)
		}
		for _, k := range ghosts {
			if !bytes.Equal(c.value(t, k), before[k]) {
				t.Errorf("%s is not byte-identical after restore", k)
			}
		}
	})

	t.Run("a key whose namespace was there at the purge restores as before", func(t *testing.T) {
		// A namespace of its own, every value in it readable, so the purge
		// has nothing else to refuse.
		c.createNamespace(t, "live")
		c.createPod(t, "live", "stuck", withFinalizer("example.com/never-removed"))
		mustNoErr(t, "delete stuck pod", c.kube.CoreV1().Pods("live").Delete(context.Background(), "stuck", metav1.DeleteOptions{}))
		key := "/registry/pods/live/stuck"
		stuck := c.value(t, key)
		root := filepath.Join(t.TempDir(), "backups")
		if out, errOut, code := c.regghost(t, "", "purge", key, "--force-class", "stuck-terminating", "--terminating-after", "1ns",
			"--backup-dir", root, "--confirm", "--yes"); code != 0 || c.value(t, key) != nil {
			t.Fatalf("purge %s: exit %d: %s\n%s", key, code, errOut, out)
		}
		got, errOut, code := c.restoreOutcomes(t, "restore", onlyBackupDir(t, root), "--confirm", "--yes")
		if code != 0 || got[key].Outcome != etcdwrite.Restored || !bytes.Equal(c.value(t, key), stuck) {
			t.Errorf("exit %d: %+v: %s", code, got[key], errOut)
		}
	})
}

// TestKineSnapshotRestoreWritesThePurgesKeys: on kine, the disaster path
// (snapshot restore of the purge's logical snapshot) writes back the purge's
// own keys by default, not what Kubernetes deleted since; it refuses a
// snapshot without its purge's backup beside it with one line naming
// --all-absent, which takes every absent key; and it refuses the purge's keys
// once their namespace is created again, writing nothing.
func TestKineSnapshotRestoreWritesThePurgesKeys(t *testing.T) {
	parallel(t)
	c := startCluster(t, clusterOptions{kine: true})
	want := plantGhosts(t, c)
	ghosts := ghostKeys(want, "kb-system")
	before, _ := c.dump(t)
	root := filepath.Join(t.TempDir(), "backups")
	out, errOut, code := c.regghost(t, "", "purge", "-n", "kb-system", "--backup-dir", root, "--confirm", "--yes")
	if code != 0 || !strings.Contains(out, "Deleted 5 of 5 planned keys") {
		t.Fatalf("purge: exit %d: %s\n%s", code, errOut, out)
	}
	dir := onlyBackupDir(t, root)
	snap := filepath.Join(dir, snapshot.LogicalSnapshotFile)
	if !strings.Contains(out, "regghost snapshot restore "+snap+" --confirm") || !strings.Contains(out, "this purge's own keys") || !strings.Contains(out, snapshot.AllAbsentFlag) {
		t.Errorf("the disaster path does not say it writes back the purge's own keys:\n%s", out)
	}
	// Kubernetes deletes an object on its own after the snapshot.
	deleted := "/registry/configmaps/healthy/settings"
	mustNoErr(t, "delete configmap", c.kube.CoreV1().ConfigMaps("healthy").Delete(context.Background(), "settings", metav1.DeleteOptions{}))

	got, errOut, code := c.restoreOutcomes(t, "snapshot", "restore", snap)
	if code != 0 {
		t.Fatalf("snapshot restore dry run: exit %d: %s", code, errOut)
	}
	for _, k := range ghosts {
		if got[k].Outcome != etcdwrite.WouldRestore {
			t.Errorf("%s: %+v, want would-restore", k, got[k])
		}
	}
	if _, ok := got[deleted]; ok || len(got) != len(ghosts) {
		t.Errorf("the default restore plans %d keys (%s among them: %v), want the purge's %d", len(got), deleted, ok, len(ghosts))
	}

	alone := filepath.Join(t.TempDir(), snapshot.LogicalSnapshotFile)
	data, err := os.ReadFile(snap)
	mustNoErr(t, "read snapshot", err)
	mustNoErr(t, "copy snapshot", os.WriteFile(alone, data, 0o600))
	_, errOut, code = c.regghost(t, "", "snapshot", "restore", alone, "--confirm", "--yes")
	if code != 1 || !strings.Contains(errOut, "no purge backup beside the snapshot") || !strings.Contains(errOut, snapshot.AllAbsentFlag) ||
		!strings.Contains(errOut, "nothing was restored") || strings.Count(strings.TrimSpace(etcdtest.WithoutUsing(errOut)), "\n") > 0 {
		t.Errorf("a snapshot without its purge's backup: exit %d: %q", code, errOut)
	}
	got, errOut, code = c.restoreOutcomes(t, "snapshot", "restore", alone, snapshot.AllAbsentFlag)
	if code != 0 || got[deleted].Outcome != etcdwrite.WouldRestore || got[ghosts[0]].Outcome != etcdwrite.WouldRestore {
		t.Errorf("%s dry run: exit %d: %s: %+v, %s: %+v: %s", snapshot.AllAbsentFlag, code, deleted, got[deleted], ghosts[0], got[ghosts[0]], errOut)
	}

	c.createNamespace(t, "kb-system")
	got, errOut, code = c.restoreOutcomes(t, "snapshot", "restore", snap, "--confirm", "--yes")
	assertRefused(t, "snapshot restore into a recreated namespace", got, ghosts, errOut, code)
	for _, k := range append([]string{deleted}, ghosts...) {
		if c.value(t, k) != nil {
			t.Errorf("a refused snapshot restore wrote %s", k)
		}
	}

	out, errOut, code = c.regghost(t, "", "snapshot", "restore", snap, "--confirm", "--yes", flagnames.IntoRecreated)
	if code != 0 || !strings.Contains(out, "Restored 5 keys") {
		t.Fatalf("snapshot restore %s: exit %d: %s%s", flagnames.IntoRecreated, code, out, errOut)
	}
	for _, k := range ghosts {
		if !bytes.Equal(c.value(t, k), before[k]) {
			t.Errorf("%s is not byte-identical after snapshot restore", k)
		}
	}
	if c.value(t, deleted) != nil {
		t.Errorf("the default snapshot restore brought back %s, which Kubernetes deleted", deleted)
	}
}
