package table

import (
	"bytes"
	"testing"
)

// TestEscapes: control characters are escaped in cells and in the stream,
// and a C1 control split across two writes is still caught.
func TestEscapes(t *testing.T) {
	for _, tt := range []struct{ in, cell string }{
		{"plain", "plain"},
		{"a\x1b[2Jb", `a\u001b[2Jb`},
		{"tab\tnew\nline\r", `tab\tnew\nline\u000d`},
		{"c1\u009b31m", `c1\u009b31m`},
		{"bad\xffutf8", `bad\xffutf8`},
		{"ünïcödé ✓", "ünïcödé ✓"},
	} {
		if got := Escape(tt.in); got != tt.cell {
			t.Errorf("Escape(%q) = %q, want %q", tt.in, got, tt.cell)
		}
	}
	var b bytes.Buffer
	w := NewSafeWriter(&b)
	for _, part := range []string{"x\xc2", "\x9b31m\x1b", "]0;t\x07\n\ty\x7f", "é"} {
		if _, err := w.Write([]byte(part)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if want := `x\u009b31m\u001b]0;t\u0007` + "\n\ty" + `\u007fé`; b.String() != want {
		t.Errorf("SafeWriter wrote %q, want %q", b.String(), want)
	}
}
