package backup

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestNamedAfter: the backup directories named after a scope, a second one
// of the same second included, never one of a longer name sharing its start.
func TestNamedAfter(t *testing.T) {
	root := t.TempDir()
	for d, scope := range map[string]string{
		"20261206T000000Z-namespace-shop":    "namespace shop",
		"20261206T000000Z-namespace-shop-2":  "namespace shop",
		"20261206T000001Z-namespace-shop-eu": "namespace shop-eu",
		"20261206T000002Z-namespace-shop-3":  "namespace shop-3", // a purge of shop-3, not a second of shop
		"20261206T000003Z-namespace-shop-4":  "",                 // no backup.json
		"notabackup-namespace-shop":          "namespace shop",
	} {
		if err := os.Mkdir(filepath.Join(root, d), 0o700); err != nil {
			t.Fatal(err)
		}
		if scope != "" {
			if err := os.WriteFile(filepath.Join(root, d, BackupFile), []byte(`{"scope":"`+scope+`","entries":[]}`), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	got := NamedAfter(root, "namespace shop")
	want := []string{filepath.Join(root, "20261206T000000Z-namespace-shop"), filepath.Join(root, "20261206T000000Z-namespace-shop-2")}
	if !slices.Equal(got, want) {
		t.Errorf("NamedAfter: %v, want %v", got, want)
	}
	if got := NamedAfter(filepath.Join(root, "none"), "namespace shop"); got != nil {
		t.Errorf("NamedAfter of a root that does not exist: %v", got)
	}
}
