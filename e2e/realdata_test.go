package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// realDataDir is where etcd db files of real clusters from public
// repositories are kept, beside the project (their licences allow it;
// each directory's SOURCE says where the file came from): shared/data/etcd
// of the steering repository, which developers do not commit to, or
// $REGGHOST_REAL_ETCD_DIR.
func realDataDir() string {
	if d := os.Getenv("REGGHOST_REAL_ETCD_DIR"); d != "" {
		return d
	}
	return filepath.Join("..", "..", "shared", "data", "etcd")
}

// realExpect is a real file's expect.json: what the offline commands must
// answer (a healthy real cluster: exit 0, no finding).
type realExpect struct {
	// ScanExit is scan --db's exit code (0 unless the file holds ghosts).
	ScanExit int `json:"scanExit"`
	// Keys, when set, is how many keys an independent reader counts under
	// the registry prefix.
	Keys int `json:"keys"`
}

// TestRealClustersFiles reads etcd db files of real clusters nobody on this
// project built (kubeadm clusters of several releases, as published in
// public repositories whose licence allows it) with every offline read
// command: no crash, the exit code expect.json says (0 for a healthy
// cluster: kube-apiserver's bootstrap policy is not a finding), every key
// read. The files are not in this repository; it is skipped without them.
func TestRealClustersFiles(t *testing.T) {
	parallel(t)
	root := realDataDir()
	dirs, err := os.ReadDir(root)
	if err != nil {
		t.Skipf("no real etcd files under %s (set REGGHOST_REAL_ETCD_DIR): %v", root, err)
	}
	n := 0
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		dir := filepath.Join(root, d.Name())
		db := filepath.Join(dir, "db")
		if _, err := os.Stat(db); err != nil {
			continue
		}
		n++
		t.Run(d.Name(), func(t *testing.T) {
			var want realExpect
			if b, err := os.ReadFile(filepath.Join(dir, "expect.json")); err == nil {
				mustNoErr(t, "read expect.json", json.Unmarshal(b, &want))
			}
			out, errOut, code := runBinary(t, "", "scan", "--db", db, "-o", "json")
			if code != want.ScanExit || strings.Contains(errOut, "goroutine ") {
				t.Errorf("scan --db: exit %d, want %d: %s\n%s", code, want.ScanExit, errOut, out)
			}
			if code == 0 || code == 3 {
				rep := decodeReport(t, out)
				if want.ScanExit == 0 && (len(rep.Findings) > 0 || len(rep.Dangling) > 0) {
					t.Errorf("scan --db: %d findings, dangling:\n%s", len(rep.Findings), describeRefs(rep.Dangling))
				}
				if want.Keys > 0 && rep.ScannedKeys != want.Keys {
					t.Errorf("scan --db read %d keys, an independent reader counts %d", rep.ScannedKeys, want.Keys)
				}
			}
			for _, args := range [][]string{{"space", "--db", db, "-o", "json"}, {"ls", "--db", db}} {
				if out, errOut, code := runBinary(t, "", args...); code != 0 || strings.Contains(errOut, "goroutine ") {
					t.Errorf("%v: exit %d: %s\n%.2000s", args, code, errOut, out)
				}
			}
		})
	}
	if n == 0 {
		t.Skipf("no real etcd files (a directory with a db file) under %s", root)
	}
}
