package e2e

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// maxColumns is the widest line regghost prints for a person (the README:
// every line within 120 columns on a 120-column terminal, refusals
// included). A pipe, as in these tests, is laid out for 120 columns.
const maxColumns = 120

// machineOutput reports whether args ask for output a program reads,
// whose lines are as long as their data: -o json, yaml, name, wide and
// the templates, and get's object dump.
func machineOutput(args []string) bool {
	for i, a := range args {
		v, ok := "", false
		switch {
		case a == "-o" || a == "--output":
			if i+1 < len(args) {
				v, ok = args[i+1], true
			}
		case strings.HasPrefix(a, "-o="), strings.HasPrefix(a, "--output="):
			v, ok = a[strings.Index(a, "=")+1:], true
		case strings.HasPrefix(a, "-o") && len(a) > 2:
			v, ok = a[2:], true
		}
		if ok && v != "" {
			return true
		}
	}
	return len(args) > 0 && args[0] == "get"
}

var widthLog sync.Mutex

// testDir matches the directories the tests make (t.TempDir, os.MkdirTemp),
// whose names are far longer than a node's (/var/lib/regghost/backups).
// klogLine is the header of a line the libraries log with -v.
var klogLine = regexp.MustCompile(`^[IWEF][0-9]{4} [0-9:.]+ `)

var (
	testDir    = regexp.MustCompile(regexp.QuoteMeta(os.TempDir()) + `/(?:[^/\s]+/[0-9]{3}|(?:regghost-e2e-bin|kms|rg)[0-9]+)`)
	e2eBackups = regexp.MustCompile(regexp.QuoteMeta(os.TempDir()) + `/regghost-e2e-backups[0-9]+`)
)

// shortTempDir is a temporary directory whose name is no longer than a
// node's /var/lib/regghost (/tmp/rgNNNNNNNNNN): output holding a path
// under it wraps as it would on a node, where t.TempDir's long names would
// be broken inside a word, so a guide can capture it.
func shortTempDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "rg")
	mustNoErr(t, "make a temporary directory", err)
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// asOnANode writes the tests' directories as a node's: the run's default
// backup directory as /var/lib/regghost/backups, any other as
// /var/lib/regghost.
func asOnANode(s string) string {
	return testDir.ReplaceAllString(e2eBackups.ReplaceAllString(s, "/var/lib/regghost/backups"), "/var/lib/regghost")
}

// checkWidth holds every line of a person's output to maxColumns: stdout
// and stderr, refusals included, the tests' temporary directories counted
// as a node's /var/lib/regghost. Through a pipe (pipe set) the error a
// command ends with is one line, for scripts and logs, and is not held to
// it; on a terminal it is wrapped, and is. With REGGHOST_E2E_WIDTH_LOG set,
// lines over it are appended to that file instead of failing the test.
func checkWidth(t *testing.T, args []string, pipe bool, code int, stdout, stderr string) {
	t.Helper()
	if machineOutput(args) {
		stdout = "" // a program's input; stderr is still a person's
	}
	if pipe && code != 0 {
		lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
		if last := lines[len(lines)-1]; strings.HasPrefix(last, "regghost: ") {
			stderr = strings.Join(lines[:len(lines)-1], "\n")
		}
	}
	for _, s := range []string{stdout, stderr} {
		for _, line := range strings.Split(asOnANode(s), "\n") {
			line = strings.TrimRight(line, "\r")
			if klogLine.MatchString(line) {
				continue // a library's log (-v), not regghost's own output
			}
			if n := utf8.RuneCountInString(line); n > maxColumns {
				if p := os.Getenv("REGGHOST_E2E_WIDTH_LOG"); p != "" {
					widthLog.Lock()
					f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
					if err == nil {
						fmt.Fprintf(f, "%s\t%s\t%d\t%s\n", t.Name(), strings.Join(args[:min(2, len(args))], " "), n, line)
						f.Close()
					}
					widthLog.Unlock()
					continue
				}
				t.Errorf("regghost %s printed a line of %d columns (at most %d):\n%s", strings.Join(args[:min(2, len(args))], " "), n, maxColumns, line)
			}
		}
	}
}
