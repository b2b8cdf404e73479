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
		{"refused: add --retain-volumes; nothing was changed", "(what --retain-volumes risks: regghost overrides retain-volumes)"},
		{"refused (--other-cluster-grants writes it)", "regghost overrides other-cluster-grants)"},
		{"connection refused", ""},
	}
	for _, tt := range tests {
		got := WithOverrideLink(tt.in)
		if tt.want == "" && got != tt.in || tt.want != "" && !strings.HasSuffix(got, tt.want) {
			t.Errorf("WithOverrideLink(%q) = %q, want it to end in %q", tt.in, got, tt.want)
		}
	}
}

// TestEveryOverrideLinkResolves: each override a refusal points to has its
// section in the page the binary carries.
func TestEveryOverrideLinkResolves(t *testing.T) {
	names := strings.Split(strings.TrimSuffix(strings.TrimPrefix(overrideFlags.String(), `--(`), `)\b`), "|")
	if len(names) < 10 {
		t.Fatalf("override names %v", names)
	}
	for _, name := range names {
		text, err := Override(name)
		if err != nil || !strings.HasPrefix(text, "## --"+name+"\n") || strings.Contains(text[5:], "\n## ") || strings.Contains(text, "<a id=") {
			t.Errorf("Override(%s) = %.80q, %v", name, text, err)
		}
	}
	if _, err := Override("--nope"); err == nil || !strings.Contains(err.Error(), "no override --nope (regghost overrides prints every one)") {
		t.Errorf("unknown override: %v", err)
	}
	if page, _ := Override(""); !strings.HasPrefix(page, "# Overrides and what each risks") {
		t.Errorf("the whole page: %.60q", page)
	}
}

// TestOverridesForATerminal: the overrides page printed for an 80-column
// terminal has no line wider, no maintainer's HTML comment or anchor, no
// Markdown link or back quote, and every flag's section still.
func TestOverridesForATerminal(t *testing.T) {
	page, err := Override("")
	if err != nil {
		t.Fatal(err)
	}
	out := ForTerminal(page, 80)
	for i, line := range strings.Split(out, "\n") {
		if len(line) > 80 {
			t.Errorf("line %d is %d columns: %q", i+1, len(line), line)
		}
	}
	for _, bad := range []string{"<!--", "<a id", "](", "`"} {
		if strings.Contains(out, bad) {
			t.Errorf("printed with %q", bad)
		}
	}
	for _, flag := range []string{"--confirm", "--accept-impact", "--delete-unavailable-apiservice", "--with-live"} {
		if !strings.Contains(out, "\n"+flag+"\n") {
			t.Errorf("no section for %s", flag)
		}
	}
}
