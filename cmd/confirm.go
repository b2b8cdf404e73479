package cmd

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"
)

// confirmAction asks before a destructive step. On a terminal the user must
// type "yes" (even with --yes). Without a terminal there is nobody to ask:
// the command refuses unless --yes was given. The question goes to the
// terminal itself (/dev/tty), else to errOut: never into stdout, which may
// be a JSON document or a file.
func confirmAction(in io.Reader, errOut io.Writer, yes bool, question string) error {
	if f, ok := in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		out := errOut
		if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
			defer tty.Close()
			out = tty
		}
		fmt.Fprintf(out, "%s Type yes to continue: ", question)
		line, _ := bufio.NewReader(in).ReadString('\n')
		if strings.TrimSpace(line) != "yes" {
			return &exitError{code: ExitError, err: fmt.Errorf("not confirmed; nothing was changed")}
		}
		return nil
	}
	if !yes {
		return usageError("stdin is not a terminal, so nobody can be asked: add --yes to confirm; nothing was changed")
	}
	return nil
}
