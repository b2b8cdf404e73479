package cli

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"
)

// TestAskAgainIsNeverAnsweredByYes: --yes answers the plan that was shown;
// a question about what a step revealed after it is never answered without
// a terminal, --yes or not, while the first question is.
func TestAskAgainIsNeverAnsweredByYes(t *testing.T) {
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	for _, in := range []io.Reader{strings.NewReader("yes\n"), devNull} {
		w := &WriteFlags{Confirm: true, Yes: true}
		var errOut bytes.Buffer
		if err := w.Ask(in, &errOut, "Delete?"); err != nil {
			t.Errorf("%T: the plan's question with --yes: %v", in, err)
		}
		err := w.AskAgain(in, &errOut, "Also remove the finalizers of these 1 objects, which the plan did not show?")
		if err == nil || !strings.Contains(err.Error(), "--yes confirms only the plan that was shown") {
			t.Errorf("%T: what a step revealed, with --yes: %v, want a no", in, err)
		}
	}
}

// TestWrapQuestion: a long question is wrapped to the terminal, the answer
// typed on its last line.
func TestWrapQuestion(t *testing.T) {
	q := "Delete 1 dangling APIService, then annotate namespace shop regghost.io/unblocked-at (to have the namespace controller look again), through the API server? Type yes to continue:"
	got := wrapQuestion(q, 80)
	for _, line := range strings.Split(got, "\n") {
		if len(line) > 80 {
			t.Errorf("line of %d columns: %q", len(line), line)
		}
	}
	if strings.Join(strings.Fields(got), " ") != q || strings.HasSuffix(got, "\n") {
		t.Errorf("wrapped to %q", got)
	}
}

// TestSayErrorIsOneEscapedLine: through a pipe, an error is one line
// (joined errors included) and a name from etcd cannot drive the
// terminal that later shows the log.
func TestSayErrorIsOneEscapedLine(t *testing.T) {
	var b bytes.Buffer
	sayError(&b, "first\nkey /registry/configmaps/a/evil\x1b[2J")
	if got, want := b.String(), "regghost: first; key /registry/configmaps/a/evil\\u001b[2J\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestQuantityFlag: every size flag reads bytes or a quantity, as kubectl.
func TestQuantityFlag(t *testing.T) {
	for in, want := range map[string]int64{"8Gi": 8 << 30, "8589934592": 8 << 30, "2G": 2e9, "-1": -1} {
		var v int64
		if err := (Quantity{V: &v}).Set(in); err != nil || v != want {
			t.Errorf("%s: %d, %v; want %d", in, v, err, want)
		}
	}
}
