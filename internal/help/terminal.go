package help

import (
	"regexp"
	"strings"
)

var (
	// comments are HTML comments, a maintainer's notes (one or more lines).
	comments = regexp.MustCompile(`(?s)<!--.*?-->\n?`)
	// links are Markdown links: their text stays, the target goes.
	links = regexp.MustCompile(`\[([^\]]+)\]\([^)]*\)`)
)

// ForTerminal is a Markdown page as a person reads it in a terminal: no
// HTML comments or anchors, links as their text, back quotes and emphasis
// dropped, headings as plain lines, a table's rows as paragraphs ("first
// cell (second): third"), and every paragraph and list item wrapped to
// width (at most Width) with a hanging indent.
func ForTerminal(md string, width int) string {
	width = min(max(width, 40), Width)
	md = comments.ReplaceAllString(md, "")
	md = anchors.ReplaceAllString(md, "")
	var out []string
	var para []string
	indent := ""
	flush := func() {
		if len(para) > 0 {
			out = append(out, wrapAt(strings.Join(para, " "), len(indent), width))
			para, indent = nil, ""
		}
	}
	plain := func(s string) string {
		s = links.ReplaceAllString(s, "$1")
		return strings.NewReplacer("`", "", "**", "").Replace(s)
	}
	header := true
	for _, line := range strings.Split(md, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case t == "":
			flush()
			header = true
			if len(out) > 0 && out[len(out)-1] != "" {
				out = append(out, "")
			}
		case strings.HasPrefix(t, "#"):
			flush()
			out = append(out, plain(strings.TrimSpace(strings.TrimLeft(t, "#"))))
		case strings.HasPrefix(t, "|"):
			flush()
			cells := strings.Split(strings.Trim(strings.ReplaceAll(t, `\|`, "\x00"), "|"), "|")
			for i := range cells {
				cells[i] = strings.ReplaceAll(plain(strings.TrimSpace(cells[i])), "\x00", "|")
			}
			if header || strings.HasPrefix(cells[0], "---") {
				header = false
				continue
			}
			row := cells[0]
			if len(cells) > 2 {
				row += " (" + cells[1] + "): " + strings.Join(cells[2:], "; ")
			} else if len(cells) == 2 {
				row += ": " + cells[1]
			}
			out = append(out, wrapAt("  "+row, 4, width))
		case strings.HasPrefix(t, "- ") || strings.HasPrefix(t, "* "):
			flush()
			lead := line[:len(line)-len(strings.TrimLeft(line, " "))]
			indent = lead + "  "
			para = append(para, lead+"- "+plain(t[2:]))
		default:
			if len(para) == 0 {
				indent = ""
			}
			para = append(para, plain(t))
		}
	}
	flush()
	return strings.TrimSpace(strings.Join(out, "\n")) + "\n"
}
