package textsafe

import (
	"testing"
	"unicode/utf8"
)

func TestEscape(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain", "kube-system", "kube-system"},
		{"empty", "", ""},
		{"unicode kept", "ünïcödé ✓", "ünïcödé ✓"},
		{"U+FFFD written as such is valid", "a\uFFFDb", "a\uFFFDb"},
		{"backslash kept", `a\b`, `a\b`},
		{"invalid byte", "ns-\xff", `ns-\xff`},
		{"truncated sequence", "ns-\xe2\x9c", `ns-\xe2\x9c`},
		{"escape sequence", "a\x1b[2Jb", `a\u001b[2Jb`},
		{"layout characters", "tab\tnew\nline\r", `tab\tnew\nline\u000d`},
		{"C1 control", "c1\u009b31m", `c1\u009b31m`},
		{"DEL", "x\x7f", `x\u007f`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Escape(tt.in)
			if got != tt.want {
				t.Errorf("Escape(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if !utf8.ValidString(got) || !Clean(got) {
				t.Errorf("Escape(%q) = %q is not clean", tt.in, got)
			}
			if again := Escape(got); again != got {
				t.Errorf("Escape is not idempotent on %q: %q", got, again)
			}
			if Clean(tt.in) != (tt.in == tt.want) {
				t.Errorf("Clean(%q) = %v", tt.in, Clean(tt.in))
			}
		})
	}
}

// TestEscapeKeepsInvalidNamesApart: two names that differ only in their
// invalid bytes stay different, unlike strings.ToValidUTF8's U+FFFD.
func TestEscapeKeepsInvalidNamesApart(t *testing.T) {
	names := []string{"ns-\xff", "ns-\xfe", "ns-\xff\xff", "ns-\xc3", "ns-\x80"}
	seen := map[string]string{}
	for _, n := range names {
		e := Escape(n)
		if other, ok := seen[e]; ok {
			t.Errorf("%q and %q both escape to %q", other, n, e)
		}
		seen[e] = n
	}
}
