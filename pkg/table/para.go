package table

import (
	"fmt"
	"io"
	"strings"
)

// Para writes text as a paragraph wrapped to out's width: the first line
// starts with first, the others with rest (usually blanks), and the first
// line ends no further right than the others. The text is escaped first (it
// may hold names from etcd), so that what is measured is what is printed;
// first and rest are not.
func Para(out io.Writer, first, rest, text string) {
	w, _ := layoutOf(out)
	text = Escape(text)
	for i, l := range wrapLines(text, w-max(TextWidth(first), TextWidth(rest)), w-TextWidth(rest)) {
		if i == 0 {
			fmt.Fprintln(out, first+l)
		} else {
			fmt.Fprintln(out, rest+l)
		}
	}
}

// Wrapped writes text as a paragraph wrapped to out's width, continuation
// lines indented by two blanks.
func Wrapped(out io.Writer, text string) {
	Para(out, "", "  ", text)
}

// Command writes a command to copy, indented, escaped. One that does not fit
// is broken before its options, each line but the last ending in a
// backslash, so that it still pastes as one command; a path longer than
// the screen then overflows its own line only. One with a single option
// (regghost restore DIR --confirm) is written whole: its one flag is not
// worth a command read in two pieces.
func Command(out io.Writer, indent, command string) {
	w, _ := layoutOf(out)
	command = Escape(command)
	if TextWidth(indent+command) <= w {
		fmt.Fprintln(out, indent+command)
		return
	}
	parts := strings.Split(command, " --")
	if len(parts) < 3 {
		fmt.Fprintln(out, indent+command)
		return
	}
	lines := []string{indent + parts[0]}
	if head, path, ok := strings.Cut(parts[0], " /"); ok && TextWidth(indent+parts[0]+" \\") > w {
		// A path too long to share its line: on a line of its own.
		lines = []string{indent + head, indent + "    /" + path}
	}
	for _, opt := range parts[1:] {
		opt = "--" + opt
		last := &lines[len(lines)-1]
		if TextWidth(*last+" "+opt+" \\") <= w {
			*last += " " + opt
		} else {
			lines = append(lines, indent+"    "+opt)
		}
	}
	for i := range lines[:len(lines)-1] {
		lines[i] += " \\"
	}
	fmt.Fprintln(out, strings.Join(lines, "\n"))
}

// LabeledCommand writes label and a command on one line when they fit,
// else the command on a line of its own below the label (as Command writes
// it, indented by two blanks). On one line both are written as they are
// (the SafeWriter the output goes through escapes control characters); on
// two the command is escaped as Command escapes it.
func LabeledCommand(out io.Writer, label, command string) {
	if w, _ := layoutOf(out); TextWidth(label+"  "+command) <= w {
		fmt.Fprintln(out, label+"  "+command)
		return
	}
	fmt.Fprintln(out, label)
	Command(out, "  ", command)
}
