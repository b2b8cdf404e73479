package backup

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/regghost/regghost/pkg/notice"
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

// TestExisted: a namespace is taken as written away when a backup of any
// root is named after it (an empty root is skipped), and the newest such backup
// is named with the command that puts it back; otherwise nothing is said.
func TestExisted(t *testing.T) {
	first, second := t.TempDir(), t.TempDir()
	dir := filepath.Join(second, "20261206T000000Z-namespace-shop")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, BackupFile), []byte(`{"scope":"namespace shop","entries":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var said []notice.Notice
	existed := Existed(notice.Collect(&said), first, "", second, second)
	if !existed("shop") || len(said) != 1 || !strings.Contains(said[0].Text, "`regghost restore "+dir+"`") {
		t.Errorf("shop: said %v", said)
	}
	if existed("other") || len(said) != 1 {
		t.Errorf("other: existed, said %v", said)
	}
}
