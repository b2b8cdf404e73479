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
	for _, d := range []string{"20261206T000000Z-namespace-shop", "20261206T000000Z-namespace-shop-2", "20261206T000001Z-namespace-shop-eu", "notabackup-namespace-shop"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o700); err != nil {
			t.Fatal(err)
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
