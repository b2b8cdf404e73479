package cmd

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/regghost/regghost/pkg/table"
)

// confirmAction asks before a destructive step. --yes answers it, as in
// apt or kubectl delete's scripts: the question is still written, with the
// answer. Otherwise, on a terminal the user must type "yes"; without one
// there is nobody to ask: the command refuses. The question goes to the
// terminal itself (/dev/tty), else to errOut: never into stdout, which may
// be a JSON document or a file.
func confirmAction(in io.Reader, errOut io.Writer, yes bool, question string) error {
	f, ok := in.(*os.File)
	terminal := ok && term.IsTerminal(int(f.Fd()))
	if yes && terminal {
		fmt.Fprintf(errOut, "%s yes (--yes)\n", question)
		return nil
	}
	if terminal {
		out := errOut
		if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
			defer tty.Close()
			out = tty
		}
		fmt.Fprint(out, wrapQuestion(question+" Type yes to continue:", table.Width(out))+" ")
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

// yesHelp is --yes's help, the same for every command that takes it.
const yesHelp = "answer yes to the plan's question (on a terminal too); never to a later question about what a step revealed"

// writeFlags are the flags of every command that writes: --confirm (a dry
// run without it), --yes and, where it writes a backup, --backup-dir.
type writeFlags struct {
	confirm, yes bool
	backupDir    string
}

// add adds the flags; confirmHelp says what --confirm does, backupHelp what
// goes into --backup-dir ("" for a command without one).
func (w *writeFlags) add(c *cobra.Command, confirmHelp, backupHelp string) {
	c.Flags().BoolVar(&w.confirm, "confirm", false, confirmHelp)
	c.Flags().BoolVar(&w.yes, "yes", false, yesHelp)
	if backupHelp != "" {
		c.Flags().StringVar(&w.backupDir, "backup-dir", envOr("REGGHOST_BACKUP_DIR", defaultBackupRoot), backupHelp+" (env REGGHOST_BACKUP_DIR)")
	}
}

// ask is confirmAction with --yes.
func (w *writeFlags) ask(in io.Reader, errOut io.Writer, question string) error {
	return confirmAction(in, errOut, w.yes, question)
}

// askAgain asks about what a step revealed after the plan was confirmed.
// --yes answered the plan that was shown, never this: without a terminal
// nobody can be asked, so the answer is no.
func (w *writeFlags) askAgain(in io.Reader, errOut io.Writer, question string) error {
	if f, ok := in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return confirmAction(in, errOut, false, question)
	}
	return fmt.Errorf("stdin is not a terminal, and --yes confirms only the plan that was shown")
}

// passwordAsker asks for the etcd password of --user NAME on the terminal,
// once, when etcd is first connected to and neither --user NAME:PASSWORD,
// --password nor ETCDCTL_PASSWORD gave it (as etcdctl does); a command that
// never connects (version, backup ls) never asks. Without a terminal it
// asks nothing, and connecting says what to give.
func passwordAsker(in io.Reader, errOut io.Writer, user string) func() (string, error) {
	var once sync.Once
	var pw string
	var err error
	return func() (string, error) {
		once.Do(func() {
			f, ok := in.(*os.File)
			if !ok || !term.IsTerminal(int(f.Fd())) {
				return
			}
			out := errOut
			if tty, terr := os.OpenFile("/dev/tty", os.O_WRONLY, 0); terr == nil {
				defer tty.Close()
				out = tty
			}
			fmt.Fprintf(out, "Password for etcd user %s: ", user)
			b, rerr := term.ReadPassword(int(f.Fd()))
			fmt.Fprintln(out)
			if rerr != nil {
				err = fmt.Errorf("read the password of etcd user %s: %w", user, rerr)
			}
			pw = string(b)
		})
		return pw, err
	}
}

// wrapQuestion breaks a question at spaces into lines of at most width
// columns, continuation lines indented by two, with no newline after the
// last: the answer is typed on it.
func wrapQuestion(q string, width int) string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(q) {
		if line != "" && len(line)+1+len(w) > width-4 {
			lines = append(lines, line)
			line = "  " + w
			continue
		}
		line = strings.TrimPrefix(line+" "+w, " ")
	}
	return strings.Join(append(lines, line), "\n")
}
