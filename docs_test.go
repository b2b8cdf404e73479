package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The hand-written pages: README, CONTRIBUTING, docs/*.md and the how-tos.
// docs/reference and docs/man are generated from the code and not counted;
// the CHANGELOG is a record, not a page to read through.
func handWritten(t *testing.T) []string {
	t.Helper()
	pages := []string{"README.md", "CONTRIBUTING.md"}
	for _, glob := range []string{"docs/*.md", "docs/how-to/*.md"} {
		m, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, m...)
	}
	return pages
}

// Budgets of the hand-written documentation (issue 52, "half the words"):
// every fact is said once and linked from elsewhere, and a how-to is read
// during an incident, so it fits in 200 lines.
const (
	maxDocWords    = 30000
	maxHowToLines  = 200
	howToDirectory = "docs/how-to/"
)

// TestDocsFitTheirBudget holds the documentation to its budget: at most
// maxDocWords words in all, and no how-to longer than maxHowToLines lines.
func TestDocsFitTheirBudget(t *testing.T) {
	total := 0
	for _, p := range handWritten(t) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		total += len(strings.Fields(string(b)))
		if lines := strings.Count(string(b), "\n"); strings.HasPrefix(p, howToDirectory) && lines > maxHowToLines {
			t.Errorf("%s has %d lines: a how-to is at most %d (say each fact once; link the rest)", p, lines, maxHowToLines)
		}
	}
	if total > maxDocWords {
		t.Errorf("the hand-written documentation has %d words, at most %d", total, maxDocWords)
	}
	t.Logf("%d words of hand-written documentation", total)
}

var (
	mdLink     = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdHeading  = regexp.MustCompile(`(?m)^#{1,6}\s+(.+?)\s*$`)
	htmlAnchor = regexp.MustCompile(`<a (?:id|name)="([^"]+)"`)
	fence      = regexp.MustCompile("(?ms)^```.*?^```")
)

// anchors returns the anchors of a Markdown page as GitHub makes them: one
// per heading (lower case, punctuation dropped, blanks made dashes, a
// repeated one numbered) and one per <a id>.
func anchors(text string) map[string]bool {
	text = fence.ReplaceAllString(text, "")
	out := map[string]bool{}
	seen := map[string]int{}
	for _, m := range mdHeading.FindAllStringSubmatch(text, -1) {
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	for _, m := range htmlAnchor.FindAllStringSubmatch(text, -1) {
		out[m[1]] = true
	}
	return out
}

// TestDocsLinksResolve: every relative link of a hand-written page names a
// file that exists and, when it has one, an anchor that page has, so a page
// cut short does not leave another page pointing at nothing.
func TestDocsLinksResolve(t *testing.T) {
	cache := map[string]map[string]bool{}
	for _, p := range handWritten(t) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		text := fence.ReplaceAllString(string(b), "")
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			link := m[1]
			if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(link, "#")
			target := p
			if file != "" {
				target = filepath.Join(filepath.Dir(p), file)
			}
			st, err := os.Stat(target)
			if err != nil {
				t.Errorf("%s links %s: %v", p, link, err)
				continue
			}
			if anchor == "" || st.IsDir() || !strings.HasSuffix(target, ".md") {
				continue
			}
			a, ok := cache[target]
			if !ok {
				tb, err := os.ReadFile(target)
				if err != nil {
					t.Fatal(err)
				}
				a = anchors(string(tb))
				cache[target] = a
			}
			if !a[anchor] {
				t.Errorf("%s links %s: %s has no heading #%s", p, link, target, anchor)
			}
		}
	}
}
