package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// A capture is a block of a guide (docs/how-to, docs) marked as this
// run's output: `<!-- capture: TestName/label -->`, optionally with
// ` exit=N`, right above its fenced block. checkCapture holds it to what
// the test printed, so a guide fails its test when the output drifts.
type capture struct {
	file  string
	line  int
	exit  int // -1: not stated
	lines []string
}

var (
	captureMark = regexp.MustCompile(`^<!-- capture: (Test\w+)/([\w-]+)(?: exit=(\d+))? -->$`)
	captures    = sync.OnceValues(readCaptures)
)

// guides are the files captures are marked in: the how-tos and docs/.
func guides() ([]string, error) {
	files, err := filepath.Glob("../docs/how-to/*.md")
	if err != nil {
		return nil, err
	}
	more, err := filepath.Glob("../docs/*.md")
	return append(files, more...), err
}

// markIndent is the blanks a capture mark is indented by: its block's.
func markIndent(line string) string { return line[:len(line)-len(strings.TrimLeft(line, " \t"))] }

// readCaptures reads every marked block of the guides.
func readCaptures() (map[string][]capture, error) {
	files, err := guides()
	if err != nil {
		return nil, err
	}
	out := map[string][]capture{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		lines := strings.Split(string(b), "\n")
		for i := 0; i < len(lines); i++ {
			m := captureMark.FindStringSubmatch(strings.TrimSpace(lines[i]))
			if m == nil {
				continue
			}
			c := capture{file: f, line: i + 1, exit: -1}
			if m[3] != "" {
				c.exit, _ = strconv.Atoi(m[3])
			}
			// A block inside a list item is indented as its mark is.
			indent := markIndent(lines[i])
			if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], indent+"```") {
				return nil, fmt.Errorf("%s:%d: a capture mark not right above a fenced block", f, i+1)
			}
			for i += 2; i < len(lines) && !strings.HasPrefix(lines[i], indent+"```"); i++ {
				c.lines = append(c.lines, strings.TrimPrefix(lines[i], indent))
			}
			out[m[1]+"/"+m[2]] = append(out[m[1]+"/"+m[2]], c)
		}
	}
	return out, nil
}

var (
	captureHex = regexp.MustCompile(`\b[0-9a-f]{8,}(?:-[0-9a-f]*)*`) // hashes, IDs, UUIDs (whole or cut)
	// A path starts a word (after a blank, a quote, a bracket, = or :),
	// so group/version and provider/key stay what they say.
	capturePath = regexp.MustCompile("(^|[\\s\"'`(\\[=:])(?:/+[^\\s/:,;()\\[\\]'\"`]+)+/?")
	// A number is set aside, but not the few digits that end a name's
	// letters (key1, v1beta1, m2, x509): those say which one.
	captureNum = regexp.MustCompile(`([A-Za-z]?)([0-9]+(?:[.,][0-9]+)*)`)
	// A duration is one token however long it ran: 8s, 1m5s, 2h0m0s.
	captureDuration = regexp.MustCompile(`\b[0-9]+(?:\.[0-9]+)?(?:h[0-9]+)?(?:m[0-9]+)?(?:\.[0-9]+)?(?:ms|s)\b|\b[0-9]+h[0-9]+m\b`)
	captureSpace    = regexp.MustCompile(`\s+`)
	// A KMS key ID is a name's digits: it says which key.
	captureKeyID = regexp.MustCompile(`key ID ([0-9]{1,3})\b`)
	// A time of day is one token (its hour is not a name's digits).
	captureTime = regexp.MustCompile(`[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]+)?)?(?:Z|[+-][0-9]{2}:?[0-9]{2})?`)
	// A count's noun is singular or plural as the count comes out ("1
	// lease", "2 leases", "1 entry", "2 entries"): once numbers are set
	// aside, so is its ending, the first three letters kept.
	captureNoun = regexp.MustCompile(`\b0 ([A-Za-z]{1,3})[A-Za-z]*`)
)

// normCapture sets aside what differs from run to run: hex (hashes, IDs),
// paths, times, numbers (revisions, sizes, counts) and the plural of what
// they count, and layout (the widths of columns, where a paragraph wraps).
// What names a thing is kept: group/version and provider/key (a path
// starts a word), the digits ending a name (key1, v1beta1, m2) and a KMS
// key ID.
func normCapture(s string) string {
	s = captureTime.ReplaceAllString(s, "0")
	s = captureKeyID.ReplaceAllString(s, "keyID$1")
	s = captureHex.ReplaceAllString(s, "0") // a hash of digits only is a number
	s = capturePath.ReplaceAllString(s, "${1}P")
	s = captureDuration.ReplaceAllString(s, "0s")
	s = captureNum.ReplaceAllStringFunc(s, func(n string) string {
		if n[0] > '9' && len(n) <= 4 && !strings.ContainsAny(n, ".,") {
			return n
		}
		if n[0] > '9' {
			return n[:1] + "0"
		}
		return "0"
	})
	s = captureNoun.ReplaceAllString(s, "0 $1")
	return strings.TrimSpace(captureSpace.ReplaceAllString(s, " "))
}

// checkCapture holds every guide block marked TestName/label (TestName
// the top-level test) to output and code: each line of the block must be
// in what was printed, once normCapture has set aside
// what differs from run to run; … stands for anything, and a line starting
// with "$ " (the command typed) is not compared.
func checkCapture(t *testing.T, label string, code int, output ...string) {
	t.Helper()
	all, err := captures()
	if err != nil {
		t.Fatalf("read the guides' captures: %v", err)
	}
	name := strings.SplitN(t.Name(), "/", 2)[0] + "/" + label
	if os.Getenv("REGGHOST_UPDATE_CAPTURES") != "" {
		if err := updateCaptures(name, output); err != nil {
			t.Errorf("update the captures of %s: %v", name, err)
		}
		return
	}
	got := normCapture(strings.Join(output, "\n"))
	for _, c := range all[name] {
		if c.exit >= 0 && c.exit != code {
			t.Errorf("%s:%d (%s) states exit code %d; this run exited %d", c.file, c.line, name, c.exit, code)
		}
		// A … (a cell cut to fit, or an elision) stands for anything.
		// Lines are not held to their order: rows of equal size and
		// notices between stdout and stderr come in either.
		for i, l := range c.lines {
			if strings.HasPrefix(l, "$ ") || strings.TrimSpace(l) == "" {
				continue
			}
			for _, part := range strings.Split(l, "…") {
				n := normCapture(part)
				if n == "" {
					continue
				}
				if !strings.Contains(got, n) {
					t.Errorf("%s:%d (%s): the guide's line is no longer printed:\n%s\nprinted:\n%s", c.file, c.line+2+i, name, l, strings.Join(output, "\n"))
					break
				}
			}
		}
	}
}

// asShown is a run's output in the order a terminal shows it: stderr's
// notices (the using line) first, then stdout, then the error the command
// ended with, when it failed.
func asShown(stdout, stderr string, code int) []string {
	lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
	if last := lines[len(lines)-1]; code != 0 && strings.HasPrefix(last, "regghost: ") {
		return []string{strings.Join(lines[:len(lines)-1], "\n"), stdout, last}
	}
	return []string{stderr, stdout}
}

// TestCapturesHaveASource: every capture mark of the guides names a test
// that checks it, so none is left unchecked.
func TestCapturesHaveASource(t *testing.T) {
	parallel(t)
	all, err := captures()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	var src strings.Builder
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src.Write(b)
	}
	code := src.String()
	for name, cs := range all {
		test, label, _ := strings.Cut(name, "/")
		i := strings.Index(code, "\nfunc "+test+"(t *testing.T) {")
		if i < 0 {
			t.Errorf("%s:%d: capture %s names no test", cs[0].file, cs[0].line, name)
			continue
		}
		body := code[i+1:]
		if j := strings.Index(body, "\nfunc "); j >= 0 {
			body = body[:j]
		}
		if !strings.Contains(body, `checkCapture(t, "`+label+`"`) {
			t.Errorf("%s:%d: %s does not check capture %q", cs[0].file, cs[0].line, test, label)
		}
	}
}

var updating sync.Mutex

// updateCaptures writes output into every block marked name, as a person
// reads it on a node: the tests' temporary directories as
// /var/lib/regghost. The block's first lines that start with "$ " (the
// command typed) stay. REGGHOST_UPDATE_CAPTURES=1 go test ./e2e -run TEST
// runs it.
func updateCaptures(name string, output []string) error {
	updating.Lock()
	defer updating.Unlock()
	files, err := guides()
	if err != nil {
		return err
	}
	var text []string
	for _, o := range output {
		if o = strings.TrimRight(asOnANode(strings.ReplaceAll(o, "\r", "")), "\n"); o != "" {
			text = append(text, o)
		}
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		lines := strings.Split(string(b), "\n")
		var out []string
		changed := false
		for i := 0; i < len(lines); i++ {
			out = append(out, lines[i])
			m := captureMark.FindStringSubmatch(strings.TrimSpace(lines[i]))
			if m == nil || m[1]+"/"+m[2] != name || i+1 >= len(lines) {
				continue
			}
			out = append(out, lines[i+1]) // the opening fence
			indent := markIndent(lines[i])
			j := i + 2
			for ; j < len(lines) && strings.HasPrefix(lines[j], indent+"$ "); j++ {
				if len(text) == 0 || !strings.HasPrefix(text[0], "$ ") { // output that starts with its command replaces the block's
					out = append(out, lines[j])
				}
			}
			for j < len(lines) && !strings.HasPrefix(lines[j], indent+"```") {
				j++
			}
			for _, l := range strings.Split(strings.Join(text, "\n"), "\n") {
				out = append(out, strings.TrimRight(indent+l, " "))
			}
			i, changed = j-1, true
		}
		if changed {
			if err := os.WriteFile(f, []byte(strings.Join(out, "\n")), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}
