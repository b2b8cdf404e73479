package help

import (
	"strings"
	"testing"
)

func TestWrapText(t *testing.T) {
	long := "  name  " + strings.Repeat("word ", 40)
	tests := []struct {
		name, in string
		lines    int
	}{
		{"short", "  name  a summary", 1},
		{"long", long, 3},
		{"one long word", strings.Repeat("x", Width+20), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := wrapText(tt.in, 8)
			lines := strings.Split(out, "\n")
			if len(lines) != tt.lines {
				t.Fatalf("%d lines, want %d:\n%s", len(lines), tt.lines, out)
			}
			for _, l := range lines[1:] {
				if !strings.HasPrefix(l, strings.Repeat(" ", 8)) {
					t.Errorf("continuation %q is not indented", l)
				}
			}
		})
	}
}

func TestWithOverrideLink(t *testing.T) {
	tests := []struct{ in, want string }{
		{"refused: add --retain-volumes; nothing was changed", "#retain-volumes)"},
		{"refused (--other-cluster-grants writes it)", "#other-cluster-grants)"},
		{"connection refused", ""},
	}
	for _, tt := range tests {
		got := WithOverrideLink(tt.in)
		if tt.want == "" && got != tt.in || tt.want != "" && !strings.HasSuffix(got, tt.want) {
			t.Errorf("WithOverrideLink(%q) = %q, want it to end in %q", tt.in, got, tt.want)
		}
	}
}
