package cmd

import (
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/term"
	"golang.org/x/text/width"
)

// The width human output is laid out for: tableWidth (120 columns), or the
// terminal's width when stdout is a terminal narrower than that, never less
// than minWidth. Tables fit it by cutting their longest cells (marked …, the
// full text in -o wide, -o json and the backup); paragraphs are wrapped to it.
const minWidth = 40

// termWidth is the width output written to w is laid out for.
func termWidth(w io.Writer) int {
	f, ok := w.(interface{ Fd() uintptr })
	if !ok {
		return tableWidth
	}
	fd := int(f.Fd())
	if !term.IsTerminal(fd) {
		return tableWidth
	}
	cols, _, err := term.GetSize(fd)
	if err != nil || cols <= 0 {
		return tableWidth
	}
	return max(minWidth, min(cols, tableWidth))
}

// laidOut is the writer the human formats print to: it carries the width
// to lay out for, and whether table cells are printed whole (-o wide).
type laidOut struct {
	io.Writer
	width int
	full  bool
}

// layoutOf says how wide the lines written to out may be, and whether table
// cells are printed whole.
func layoutOf(out io.Writer) (width int, full bool) {
	switch o := out.(type) {
	case *laidOut:
		return o.width, o.full
	case *safeWriter:
		return termWidth(o.w), false
	}
	return termWidth(out), false
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

// textWidth is the number of columns s takes on a terminal.
func textWidth(s string) int {
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
	if textWidth(s) <= w {
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
	if textWidth(s) <= w {
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

// wrap breaks s into lines of at most width columns, at spaces where it
// can; a word longer than a line is broken where the line ends.
func wrap(s string, width int) []string {
	return wrapLines(s, width, width)
}

// wrapLines is wrap with a first line of its own width.
func wrapLines(s string, first, rest int) []string {
	var lines []string
	for width := max(first, 1); textWidth(s) > width; width = max(rest, 1) {
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

// printPara writes text as a paragraph wrapped to out's width: the first
// line starts with first, the others with rest (usually blanks), and the
// first line ends no further right than the others. The text
// is escaped first (it may hold names from etcd), so that what is measured
// is what is printed.
func printPara(out io.Writer, first, rest, text string) {
	w, _ := layoutOf(out)
	text = escapeCell(text)
	for i, l := range wrapLines(text, w-max(textWidth(first), textWidth(rest)), w-textWidth(rest)) {
		if i == 0 {
			fmt.Fprintln(out, first+l)
		} else {
			fmt.Fprintln(out, rest+l)
		}
	}
}

// printWrapped writes text wrapped to out's width, continuation lines
// indented.
func printWrapped(out io.Writer, text string) {
	printPara(out, "", "  ", text)
}

// printCommand writes a command to copy, indented. One that does not fit
// is broken before its options, each line but the last ending in a
// backslash, so that it still pastes as one command. One with a single
// option (regghost restore DIR --confirm), or whose lines still would not
// fit (a path longer than the screen), is written whole: its one flag is
// not worth a command read in two pieces.
func printCommand(out io.Writer, indent, command string) {
	w, _ := layoutOf(out)
	command = escapeCell(command)
	if textWidth(indent+command) <= w {
		fmt.Fprintln(out, indent+command)
		return
	}
	parts := strings.Split(command, " --")
	if len(parts) < 3 {
		fmt.Fprintln(out, indent+command)
		return
	}
	lines := []string{indent + parts[0]}
	for _, opt := range parts[1:] {
		opt = "--" + opt
		last := &lines[len(lines)-1]
		if textWidth(*last+" "+opt+" \\") <= w {
			*last += " " + opt
		} else {
			lines = append(lines, indent+"    "+opt)
		}
	}
	for i := range lines {
		if i < len(lines)-1 {
			lines[i] += " \\"
		}
		if textWidth(lines[i]) > w {
			fmt.Fprintln(out, indent+command)
			return
		}
	}
	fmt.Fprintln(out, strings.Join(lines, "\n"))
}

// printLabeledCommand writes label and a command on one line when they fit,
// else the command on a line of its own below the label.
func printLabeledCommand(out io.Writer, label, command string) {
	if w, _ := layoutOf(out); textWidth(label+"  "+command) <= w {
		fmt.Fprintln(out, label+"  "+command)
		return
	}
	fmt.Fprintln(out, label)
	printCommand(out, "  ", command)
}
