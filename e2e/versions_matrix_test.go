package e2e

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// TestEtcdReleases runs the incident's whole repair on etcd 3.5 and 3.6
// servers (3.7 is the rest of the suite's): scan finds exactly the planted
// ghosts through the paged reads older etcd needs, purge snapshots, backs up
// and deletes them, and restore puts the same bytes back.
func TestEtcdReleases(t *testing.T) {
	parallel(t)
	for _, r := range []struct{ name, bin string }{{"3.5", bins.etcd35}, {"3.6", bins.etcd36}} {
		t.Run(r.name, func(t *testing.T) {
			c := startCluster(t, clusterOptions{etcdBin: r.bin})
			want := plantGhosts(t, c)
			rep, code := c.scanJSON(t, "--terminating-after", "1ns")
			assertFindings(t, rep, want)
			if code != 3 {
				t.Errorf("scan exit %d", code)
			}
			before, _ := c.dump(t)
			root := filepath.Join(t.TempDir(), "backups")
			out, errOut, code := c.regghost(t, "", "purge", "-n", "kb-system", "--backup-dir", root, "--confirm", "--yes")
			if code != 0 || !strings.Contains(out, "Deleted 5 of 5 planned keys") {
				t.Fatalf("purge: exit %d: %s\n%s", code, errOut, out)
			}
			ghosts := ghostKeys(want, "kb-system")
			for _, k := range ghosts {
				if c.value(t, k) != nil {
					t.Errorf("%s is still in etcd", k)
				}
			}
			if _, errOut, code := c.regghost(t, "", "restore", onlyBackupDir(t, root), "--confirm", "--yes"); code != 0 {
				t.Fatalf("restore: exit %d: %s", code, errOut)
			}
			for _, k := range ghosts {
				if !bytes.Equal(c.value(t, k), before[k]) {
					t.Errorf("%s is not byte-identical after restore", k)
				}
			}
		})
	}
}
