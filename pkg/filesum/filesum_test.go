package filesum

import (
	"os"
	"path/filepath"
	"testing"
)

// TestOf: the digest changes when a file's content changes, when it goes
// missing, and when another file is named; empty names do not count.
func TestOf(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(a, "one")
	write(b, "two")
	first := Of(a, b)
	for _, tt := range []struct {
		name   string
		change func()
		same   bool
	}{
		{"nothing changed", func() {}, true},
		{"an empty name", func() {}, true},
		{"content rewritten", func() { write(a, "uno") }, false},
		{"a file removed", func() { os.Remove(b) }, false},
	} {
		tt.change()
		got := Of(a, b)
		if tt.name == "an empty name" {
			got = Of(a, "", b)
		}
		if (got == first) != tt.same {
			t.Errorf("%s: digest unchanged %v, want %v", tt.name, got == first, tt.same)
		}
		first = got
	}
	if Of(a) == Of(b) {
		t.Errorf("two different files have one digest")
	}
}
