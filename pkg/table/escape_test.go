package table

import (
	"bytes"
	"strings"
	"testing"
)

// TestEscape: control characters and bytes that are not UTF-8 are written
// as visible escapes in a cell.
func TestEscape(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain", "plain", "plain"},
		{"an escape sequence", "a\x1b[2Jb", `a\u001b[2Jb`},
		{"tab, newline, carriage return", "tab\tnew\nline\r", `tab\tnew\nline\u000d`},
		{"a C1 control", "c1\u009b31m", `c1\u009b31m`},
		{"a byte that is not UTF-8", "bad\xffutf8", `bad\xffutf8`},
		{"other characters kept", "ünïcödé ✓", "ünïcödé ✓"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Escape(tt.in); got != tt.want {
				t.Errorf("Escape(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestSafeWriter: control characters but newline and tab are escaped in
// the stream, a C1 control split across two writes is still caught, and
// Flush writes a byte held back at the end.
func TestSafeWriter(t *testing.T) {
	tests := []struct {
		name   string
		writes []string
		want   string
	}{
		{"plain passes through", []string{"pod\tkb-system\n"}, "pod\tkb-system\n"},
		{"controls split across writes", []string{"x\xc2", "\x9b31m\x1b", "]0;t\x07\n\ty\x7f", "é"}, `x\u009b31m\u001b]0;t\u0007` + "\n\ty" + `\u007fé`},
		{"a C2 that starts no C1 control is kept", []string{"\xc2", "\xa0"}, "\u00a0"},
		{"a byte held at the end is flushed", []string{"x\xc2"}, "x\xc2"},
		{"large output is escaped in pieces", []string{strings.Repeat("a\x01", 40000)}, strings.Repeat(`a\u0001`, 40000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			w := NewSafeWriter(&b)
			for _, part := range tt.writes {
				if n, err := w.Write([]byte(part)); err != nil || n != len(part) {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if b.String() != tt.want {
				t.Errorf("SafeWriter wrote %q, want %q", b.String(), tt.want)
			}
		})
	}
}
