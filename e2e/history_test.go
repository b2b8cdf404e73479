package e2e

import (
	"archive/zip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/history"
)

// historyJSON runs history with -o json and decodes it.
func historyJSON(t *testing.T, run func(args ...string) (string, string, int), args ...string) (*history.History, string) {
	t.Helper()
	out, errOut, code := run(append(args, "-o", "json")...)
	if code != 0 {
		t.Fatalf("history %v: exit %d: %s", args, code, errOut)
	}
	h := &history.History{}
	mustNoErr(t, "decode history", json.Unmarshal([]byte(out), h))
	return h, errOut
}

func leftKeys(d history.NamespaceDelete) string {
	var keys []string
	for _, o := range d.Left {
		keys = append(keys, o.Key)
	}
	return strings.Join(keys, " ")
}

// eventSet is each event as "key revision type".
func eventSet(h *history.History) map[string]bool {
	m := map[string]bool{}
	for _, e := range h.Events {
		m[fmt.Sprintf("%s %d %s", e.Key, e.Revision, e.Type)] = true
	}
	return m
}

// TestHistoryOfTheNamespaceDeleteThatMadeGhosts: in the demo scenario
// (kb-system's namespace key force-deleted with its pods, configmap, secret
// and Widget still in it, a namespace controller running), history -n
// kb-system names the revision of that delete and exactly the objects scan
// calls its ghosts, live, from an etcdctl snapshot, and from the same
// snapshot zipped as k3s does; the file holds every revision, tombstones
// included; a key never written has no history; and once etcd is compacted
// past the delete, the live history says so while the file still has it.
func TestHistoryOfTheNamespaceDeleteThatMadeGhosts(t *testing.T) {
	parallel(t)
	c := startCluster(t, clusterOptions{})
	c.startControllerManager(t, "namespace-controller")
	want := plantGhosts(t, c)
	live := func(args ...string) (string, string, int) { return c.regghost(t, "", args...) }
	offline := func(args ...string) (string, string, int) { return runBinary(t, "", args...) }

	rep, _ := c.scanJSON(t, "-n", "kb-system")
	var ghosts []string
	for _, f := range rep.Findings {
		if f.Has(etcdscan.ClassOrphanedNamespace) {
			ghosts = append(ghosts, f.Key)
		}
	}
	sort.Strings(ghosts)
	if got, exp := strings.Join(ghosts, " "), strings.Join(ghostKeys(want, "kb-system"), " "); got != exp {
		t.Fatalf("scan's kb-system ghosts %s, want %s", got, exp)
	}

	h, _ := historyJSON(t, live, "history", "-n", "kb-system")
	if len(h.NamespaceDeletes) != 1 || leftKeys(h.NamespaceDeletes[0]) != strings.Join(ghosts, " ") {
		t.Fatalf("live: namespace deletes %+v, want one leaving %v", h.NamespaceDeletes, ghosts)
	}
	deletedAt := h.NamespaceDeletes[0].Revision
	var nsKeyDeleted bool
	for _, e := range h.Events {
		if p, err := etcdscan.ParseKey("/registry/", e.Key); err != nil || (p.Namespace != "kb-system" && e.Key != "/registry/namespaces/kb-system") {
			t.Errorf("live: %s is not kb-system's", e.Key)
		}
		if e.Key == "/registry/namespaces/kb-system" && e.Type == history.Deleted && e.Revision == deletedAt {
			nsKeyDeleted = true
		}
		if e.Type != history.Deleted && e.Object == nil {
			t.Errorf("live: %s at %d: fields unknown: %s", e.Key, e.Revision, e.Unreadable)
		}
	}
	if !nsKeyDeleted {
		t.Errorf("live: no delete of kb-system's key at %d among %d events", deletedAt, len(h.Events))
	}

	t.Run("the table says the moment and fits 120 columns", func(t *testing.T) {
		out, errOut, code := live("history", "-n", "kb-system")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		say := fmt.Sprintf("Namespace kb-system's key was deleted at revision %d with %d objects still in it", deletedAt, len(ghosts))
		if !strings.Contains(out, say) || !strings.Contains(out, "etcd holds every revision since 1") {
			t.Errorf("want %q in:\n%s", say, out)
		}
		checkCapture(t, "history-namespace", code, out)
		for _, l := range strings.Split(out, "\n") {
			if len([]rune(l)) > 120 {
				t.Errorf("wider than 120 columns: %q", l)
			}
		}
	})

	dir := t.TempDir()
	snap := filepath.Join(dir, "snap.db")
	etcdctl, err := goCmd("tools/etcd", "tool", "-n", "etcdctl")
	mustNoErr(t, "find etcdctl", err)
	args := append([]string{"snapshot", "save", snap}, c.etcdArgs()...)
	if out, errOut, code := runTool(t, strings.TrimSpace(etcdctl), args...); code != 0 {
		t.Fatalf("etcdctl snapshot save: %s %s", out, errOut)
	}
	// k3s names its snapshots <name>-<node>-<unix time> and, compressed, zips
	// the one file.
	taken := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	base := fmt.Sprintf("etcd-snapshot-cp-1-%d", taken.Unix())
	zipped := filepath.Join(dir, base+".zip")
	zipOne(t, zipped, base, snap)

	var fromFile *history.History
	for _, file := range []string{snap, zipped} {
		t.Run("from "+filepath.Base(file), func(t *testing.T) {
			fh, errOut := historyJSON(t, offline, "history", "-n", "kb-system", "--db", file)
			errOut = strings.Join(strings.Fields(errOut), " ") // wrapped to 120 columns
			if len(fh.NamespaceDeletes) != 1 || fh.NamespaceDeletes[0].Revision != deletedAt || leftKeys(fh.NamespaceDeletes[0]) != strings.Join(ghosts, " ") {
				t.Errorf("namespace deletes %+v, want at %d leaving %v", fh.NamespaceDeletes, deletedAt, ghosts)
			}
			fileEvents := eventSet(fh)
			for e := range eventSet(h) {
				if !fileEvents[e] {
					t.Errorf("the file lacks %s", e)
				}
			}
			if !strings.Contains(errOut, fmt.Sprintf("revision %d", fh.Revision)) {
				t.Errorf("stderr does not say the file's revision: %s", errOut)
			}
			if file == zipped {
				if !strings.Contains(errOut, taken.Format(time.RFC3339)+" (from the k3s snapshot name); unzipped to ") {
					t.Errorf("stderr: %s", errOut)
				}
				if fmt.Sprint(eventSet(fh)) != fmt.Sprint(eventSet(fromFile)) {
					t.Errorf("the zipped snapshot's history differs from the plain one's")
				}
			}
			fromFile = fh
			out, errOut, code := offline("history", "/registry/pods/mixed/stuck", "--db", file)
			if file == zipped {
				checkCapture(t, "history-db-file", code, errOut, out)
			}
		})
	}
	t.Run("every revision of one key, tombstones included", func(t *testing.T) {
		// The stuck pod: created, finalizer kept, deleted (a
		// deletionTimestamp set, the key kept).
		fh, _ := historyJSON(t, offline, "history", "/registry/pods/mixed/stuck", "--db", zipped)
		var saw []string
		for _, e := range fh.Events {
			saw = append(saw, e.Type+": "+strings.Join(e.Changes, "; "))
		}
		all := strings.Join(saw, " | ")
		if len(fh.Events) < 2 || fh.Events[0].Type != history.Created || !strings.Contains(all, "deletionTimestamp set") {
			t.Errorf("stuck pod: %s", all)
		}
		// A force-deleted key ends in its tombstone.
		fh, _ = historyJSON(t, offline, "history", "/registry/namespaces/kb-system", "--db", snap)
		if n := len(fh.Events); n < 2 || fh.Events[n-1].Type != history.Deleted || fh.Events[n-1].Revision != deletedAt {
			t.Errorf("namespace key: %+v", fh.Events)
		}
		// A custom resource's key, by prefix.
		fh, _ = historyJSON(t, offline, "history", "example.com/widgets/", "--db", snap)
		if len(fh.Events) == 0 || fh.Events[0].Key != "/registry/example.com/widgets/kb-system/w1" || fh.Events[0].Object == nil || fh.Events[0].Object.Kind != "Widget" {
			t.Errorf("widgets: %+v", fh.Events)
		}
	})
	t.Run("a namespace deleted through the API leaves nothing", func(t *testing.T) {
		c.createNamespace(t, "tidy")
		c.createConfigMap(t, "tidy", "settings")
		mustNoErr(t, "delete namespace tidy", c.kube.CoreV1().Namespaces().Delete(context.Background(), "tidy", metav1.DeleteOptions{}))
		waitFor(t, 60*time.Second, "namespace tidy gone from etcd", func() error {
			if v := c.value(t, "/registry/namespaces/tidy"); v != nil {
				return errString("still there")
			}
			return nil
		})
		th, _ := historyJSON(t, live, "history", "-n", "tidy")
		if len(th.NamespaceDeletes) != 1 || len(th.NamespaceDeletes[0].Left) != 0 {
			t.Errorf("namespace deletes %+v, want one leaving nothing", th.NamespaceDeletes)
		}
		var saw []string
		for _, e := range th.Events {
			saw = append(saw, fmt.Sprintf("%d %s %s: %s", e.Revision, e.Type, e.Key, strings.Join(e.Changes, "; ")))
		}
		all := strings.Join(saw, "\n")
		if !strings.Contains(all, "deletionTimestamp set") || !strings.Contains(all, "delete /registry/configmaps/tidy/settings") {
			t.Errorf("events:\n%s", all)
		}
		out, _, _ := live("history", "-n", "tidy")
		if !strings.Contains(out, fmt.Sprintf("Namespace tidy's key was deleted at revision %d with no object left in it.", th.NamespaceDeletes[0].Revision)) {
			t.Errorf("%s", out)
		}
	})
	t.Run("a key never written", func(t *testing.T) {
		out, errOut, code := live("history", "/registry/pods/kb-system/never")
		if code != 0 || !strings.Contains(out, "No revision of key /registry/pods/kb-system/never is held") {
			t.Errorf("exit %d: %s %s", code, out, errOut)
		}
	})
	t.Run("bad input is one line", func(t *testing.T) {
		for _, args := range [][]string{{"history"}, {"history", "-n", "kb-system", "/registry/x"}, {"history", "-n", "Not_A_Name"}, {"history", "-n", "kb-system", "--rev", "-3"}} {
			out, errOut, code := live(args...)
			if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 {
				t.Errorf("%v: exit %d: %q %q", args, code, out, errOut)
			}
		}
		_, errOut, code := offline("history", "-n", "kb-system", "--db", filepath.Join(dir, "none.db"))
		if code != 1 || strings.Count(errOut, "\n") != 1 {
			t.Errorf("missing file: exit %d: %q", code, errOut)
		}
	})
	t.Run("compacted past the delete", func(t *testing.T) {
		resp, err := c.etcd.Get(context.Background(), "x")
		mustNoErr(t, "revision", err)
		_, err = c.etcd.Compact(context.Background(), resp.Header.Revision)
		mustNoErr(t, "compact", err)
		out, errOut, code := live("history", "-n", "kb-system")
		if code != 0 || !strings.Contains(out, fmt.Sprintf("etcd compacted its history at revision %d", resp.Header.Revision)) ||
			!strings.Contains(out, "Namespace kb-system's key was not deleted in these revisions.") {
			t.Errorf("exit %d: %s %s", code, out, errOut)
		}
		ch, _ := historyJSON(t, live, "history", "-n", "kb-system")
		if !ch.Compacted || ch.CompactRevision != resp.Header.Revision || len(ch.NamespaceDeletes) != 0 {
			t.Errorf("compacted %v at %d, deletes %+v", ch.Compacted, ch.CompactRevision, ch.NamespaceDeletes)
		}
		// The snapshot taken before still has the moment.
		fh, _ := historyJSON(t, offline, "history", "-n", "kb-system", "--db", snap)
		if len(fh.NamespaceDeletes) != 1 {
			t.Errorf("file: %+v", fh.NamespaceDeletes)
		}
	})
}

func runTool(t *testing.T, bin string, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut strings.Builder
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), errOut.String() + err.Error(), 1
	}
	return out.String(), errOut.String(), 0
}

// zipOne writes a zip holding src as name.
func zipOne(t *testing.T, path, name, src string) {
	t.Helper()
	out, err := os.Create(path)
	mustNoErr(t, "create zip", err)
	zw := zip.NewWriter(out)
	w, err := zw.Create(name)
	mustNoErr(t, "zip entry", err)
	in, err := os.Open(src)
	mustNoErr(t, "open snapshot", err)
	_, err = io.Copy(w, in)
	mustNoErr(t, "zip snapshot", err)
	in.Close()
	mustNoErr(t, "close zip", zw.Close())
	mustNoErr(t, "close zip file", out.Close())
}
