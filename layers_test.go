package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/regghost/regghost/"

// leaves import no package of regghost (docs/internals.md#layers).
var leaves = []string{"pkg/plural", "pkg/filesum", "pkg/textsafe", "pkg/names", "pkg/flagnames", "pkg/version", "pkg/notice", "pkg/usage"}

// TestImportsPointDown holds the layers docs/internals.md writes down:
// pkg/ imports neither internal/ nor cmd/, internal/ does not import cmd/,
// and a leaf imports no package of regghost. Test files are not counted
// (internal/etcdtest is test support).
func TestImportsPointDown(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		src := strings.TrimPrefix(fields[0], module)
		for _, imp := range fields[1:] {
			dst, ours := strings.CutPrefix(imp, module)
			if !ours {
				continue
			}
			switch {
			case slices.Contains(leaves, src):
				t.Errorf("%s is a leaf but imports %s", src, dst)
			case strings.HasPrefix(src, "pkg/") && (strings.HasPrefix(dst, "internal/") || strings.HasPrefix(dst, "cmd")):
				t.Errorf("%s imports %s, a layer above it", src, dst)
			case strings.HasPrefix(src, "internal/") && strings.HasPrefix(dst, "cmd"):
				t.Errorf("%s imports %s, a layer above it", src, dst)
			case strings.HasPrefix(src, "pkg/") && src != "pkg/table" && dst == "pkg/table":
				t.Errorf("%s imports pkg/table: a package below cmd/ hands what it says to a notice.Func and cmd/ lays it out", src)
			}
		}
	}
}

// TestPkgPrintsNothing: no package below cmd/ writes to the terminal
// itself (docs/internals.md#layers): it hands notices to the notice.Func
// it was given.
func TestPkgPrintsNothing(t *testing.T) {
	out, err := exec.Command("git", "grep", "--untracked", "-n", "-E", `os\.(Stdout|Stderr)|fmt\.Print`, "--", "pkg/*.go", ":!*_test.go").Output()
	if err != nil && len(out) > 0 {
		t.Fatalf("git grep: %v", err)
	}
	if s := strings.TrimSpace(string(out)); s != "" {
		t.Errorf("pkg/ writes to the terminal:\n%s", s)
	}
}
