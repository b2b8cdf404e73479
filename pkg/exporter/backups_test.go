package exporter

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestBackupCollector exports what the backups hold and the room of their
// filesystem, read at each scrape; a directory that cannot be read says so.
func TestBackupCollector(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "20261204T120000Z-namespace-kb")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "snapshot.db"), make([]byte, 5000), 0o600); err != nil {
		t.Fatal(err)
	}
	unreadable := filepath.Join(root, "file-not-dir")
	if err := os.WriteFile(unreadable, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		root  string
		want  map[string]float64
		error float64
	}{
		{root, map[string]float64{"regghost_backups": 1, "regghost_backup_bytes": 5000}, 0},
		{unreadable, nil, 1},
	} {
		reg := prometheus.NewRegistry()
		reg.MustRegister(BackupCollector{Root: tt.root})
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]float64{}
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				if m.GetLabel()[0].GetValue() != tt.root {
					t.Errorf("%s: root label %q", mf.GetName(), m.GetLabel()[0].GetValue())
				}
				got[mf.GetName()] = m.GetGauge().GetValue()
			}
		}
		for name, v := range tt.want {
			if got[name] != v {
				t.Errorf("%s: %s = %v, want %v", tt.root, name, got[name], v)
			}
		}
		if got["regghost_backup_read_errors"] != tt.error {
			t.Errorf("%s: read errors %v, want %v", tt.root, got["regghost_backup_read_errors"], tt.error)
		}
		if tt.error == 0 && (got["regghost_backup_filesystem_free_bytes"] == 0 || got["regghost_backup_filesystem_reserve_bytes"] < 1<<30) {
			t.Errorf("the filesystem's room is missing: %v", got)
		}
	}
}
