package table

import (
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/term"
	"golang.org/x/text/width"
)

// The width human output is laid out for: MaxWidth (120 columns), or the
// terminal's width when stdout is a terminal narrower than that, never less
// than minWidth. Tables fit it by cutting their longest cells (marked …, the
// full text in -o wide, -o json and the backup); paragraphs are wrapped to it.
const (
	// MaxWidth is the widest human output is laid out for.
	MaxWidth = 120
	minWidth = 40
)

// TermWidth is the width output written to w is laid out for: MaxWidth,
// or the width of the terminal w is when that is narrower (never less than
// 40 columns).
func TermWidth(w io.Writer) int {
	f, ok := w.(interface{ Fd() uintptr })
	if !ok {
		return MaxWidth
	}
	fd := int(f.Fd())
	if !term.IsTerminal(fd) {
		return MaxWidth
	}
	cols, _, err := term.GetSize(fd)
	if err != nil || cols <= 0 {
		return MaxWidth
	}
	return max(minWidth, min(cols, MaxWidth))
}

// Layout is the writer human output is printed to: it carries the width to
// lay out for, and whether table cells are printed whole (-o wide).
type Layout struct {
	io.Writer
	// Width is how many columns a line may take.
	Width int
	// Full prints table cells whole, however wide.
	Full bool
}

// Width is how many columns the lines written to out may take: a Layout's
// Width, else the width of the terminal out writes to (through a
// SafeWriter too), else MaxWidth.
func Width(out io.Writer) int {
	w, _ := layoutOf(out)
	return w
}

// Full reports whether tables written to out print their cells whole: a
// Layout asked for it (-o wide).
func Full(out io.Writer) bool {
	_, full := layoutOf(out)
	return full
}

// layoutOf says how wide the lines written to out may be, and whether table
// cells are printed whole.
func layoutOf(out io.Writer) (width int, full bool) {
	switch o := out.(type) {
	case *Layout:
		return o.Width, o.Full
	case *SafeWriter:
		return TermWidth(o.w), false
	}
	return TermWidth(out), false
}

// runeWidth is the number of columns r takes on a terminal: two for East
// Asian wide and fullwidth characters, none for combining marks.
func runeWidth(r rune) int {
	if r < utf8.RuneSelf {
		return 1
	}
	if unicode.In(r, unicode.Mn, unicode.Me) || r == '\u200b' {
		return 0
	}
	switch width.LookupRune(r).Kind() {
	case width.EastAsianWide, width.EastAsianFullwidth:
		return 2
	}
	return 1
}

// TextWidth is the number of columns s takes on a terminal: two for each
// East Asian wide or fullwidth character, none for a combining mark.
func TextWidth(s string) int {
	n := 0
	for _, r := range s {
		n += runeWidth(r)
	}
	return n
}

// ellipsis marks where a cell was cut.
const ellipsis = "…"

// cutEnd shortens s to at most w columns, keeping its start and marking
// the cut with ….
func cutEnd(s string, w int) string {
	if TextWidth(s) <= w {
		return s
	}
	if w < 1 {
		return ""
	}
	return strings.TrimRight(takeColumns(s, w-1), " ") + ellipsis
}

// cutMiddle shortens s to at most w columns, keeping its start and its end
// (the name at the end of a key) and marking the cut with ….
func cutMiddle(s string, w int) string {
	if TextWidth(s) <= w {
		return s
	}
	if w < 8 {
		return cutEnd(s, w)
	}
	head := (w - 1) / 2
	tail := w - 1 - head
	runes := []rune(s)
	i, n := len(runes), 0
	for i > 0 && n+runeWidth(runes[i-1]) <= tail {
		i--
		n += runeWidth(runes[i])
	}
	return takeColumns(s, head) + ellipsis + string(runes[i:])
}

// takeColumns is the longest start of s that takes at most w columns.
func takeColumns(s string, w int) string {
	n := 0
	for i, r := range s {
		if n+runeWidth(r) > w {
			return s[:i]
		}
		n += runeWidth(r)
	}
	return s
}

// Wrap breaks s into lines of at most width columns, at spaces where it
// can; a word longer than a line is broken where the line ends. Blanks
// around the breaks are dropped.
func Wrap(s string, width int) []string {
	return wrapLines(s, width, width)
}

// wrapLines is Wrap with a first line of its own width.
func wrapLines(s string, first, rest int) []string {
	var lines []string
	for width := max(first, 1); TextWidth(s) > width; width = max(rest, 1) {
		runes := []rune(s)
		fit, n := 0, 0
		for fit < len(runes) && n+runeWidth(runes[fit]) <= width {
			n += runeWidth(runes[fit])
			fit++
		}
		cut := max(fit, 1)
		for i := fit; i > 0; i-- {
			if runes[i] == ' ' {
				cut = i
				break
			}
		}
		lines = append(lines, strings.TrimRight(string(runes[:cut]), " "))
		s = strings.TrimLeft(string(runes[cut:]), " ")
	}
	return append(lines, s)
}
