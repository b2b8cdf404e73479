package cli

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/regghost/regghost/pkg/flagnames"
	"github.com/regghost/regghost/pkg/protect"
	"github.com/regghost/regghost/pkg/table"
)

// DefaultBackupRoot is where the commands that write keep snapshots and
// backups unless --backup-dir or REGGHOST_BACKUP_DIR says otherwise.
const DefaultBackupRoot = "/var/lib/regghost/backups"

// BackupRoot is the backup directory a command takes when --backup-dir is
// not given: REGGHOST_BACKUP_DIR, else DefaultBackupRoot.
func BackupRoot() string { return EnvOr("REGGHOST_BACKUP_DIR", DefaultBackupRoot) }

// BackupDirVar adds --backup-dir to f, into p, with help saying what the
// command keeps there.
func BackupDirVar(f *pflag.FlagSet, p *string, help string) {
	f.StringVar(p, "backup-dir", BackupRoot(), help+" (env REGGHOST_BACKUP_DIR)")
}

// Confirm asks before a destructive step. --yes answers it, as in apt or
// kubectl delete's scripts: the question is still written, with the
// answer. Otherwise, on a terminal the user must type "yes"; without one
// there is nobody to ask: the command refuses. The question goes to the
// terminal itself (/dev/tty), else to errOut: never into stdout, which may
// be a JSON document or a file.
func Confirm(in io.Reader, errOut io.Writer, yes bool, question string) error {
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
			return Exit(ExitError, fmt.Errorf("not confirmed; nothing was changed"))
		}
		return nil
	}
	if !yes {
		return Usage("stdin is not a terminal, so nobody can be asked: add --yes to confirm; nothing was changed")
	}
	return nil
}

// YesHelp is --yes's help, the same for every command that takes it.
const YesHelp = "answer yes to the plan's question (on a terminal too); never to a later question about what a step revealed"

// WriteFlags are the flags of every command that writes: --confirm (a dry
// run without it), --yes and, where it writes a backup, --backup-dir.
type WriteFlags struct {
	Confirm, Yes bool
	BackupDir    string
}

// Add adds the flags; confirmHelp says what --confirm does, backupHelp what
// goes into --backup-dir ("" for a command without one).
func (w *WriteFlags) Add(c *cobra.Command, confirmHelp, backupHelp string) {
	c.Flags().BoolVar(&w.Confirm, "confirm", false, confirmHelp)
	c.Flags().BoolVar(&w.Yes, "yes", false, YesHelp)
	if backupHelp != "" {
		BackupDirVar(c.Flags(), &w.BackupDir, backupHelp)
	}
}

// Ask is Confirm with --yes.
func (w *WriteFlags) Ask(in io.Reader, errOut io.Writer, question string) error {
	return Confirm(in, errOut, w.Yes, question)
}

// AskAgain asks about what a step revealed after the plan was confirmed.
// --yes answered the plan that was shown, never this: without a terminal
// nobody can be asked, so the answer is no.
func (w *WriteFlags) AskAgain(in io.Reader, errOut io.Writer, question string) error {
	if f, ok := in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return Confirm(in, errOut, false, question)
	}
	return fmt.Errorf("stdin is not a terminal, and --yes confirms only the plan that was shown")
}

// PasswordAsker asks for the etcd password of --user NAME on the terminal,
// once, when etcd is first connected to and neither --user NAME:PASSWORD,
// --password nor ETCDCTL_PASSWORD gave it (as etcdctl does); a command that
// never connects (version, backup ls) never asks. Without a terminal it
// asks nothing, and connecting says what to give.
func PasswordAsker(in io.Reader, errOut io.Writer, user string) func() (string, error) {
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

// OtherClusterFlags let a write take what came from another cluster.
type OtherClusterFlags struct{ Cluster, Grants bool }

// Add adds --other-cluster and --other-cluster-grants for a source (a
// backup, a snapshot).
func (o *OtherClusterFlags) Add(c *cobra.Command, source string) {
	c.Flags().BoolVar(&o.Cluster, strings.TrimPrefix(protect.OtherClusterFlag, "--"), false,
		"write a "+source+" taken from another cluster (kube-system uid or etcd cluster ID differ): a deliberate migration")
	c.Flags().BoolVar(&o.Grants, strings.TrimPrefix(protect.OtherClusterGrantsFlag, "--"), false,
		"with "+protect.OtherClusterFlag+", also write its roles, bindings, webhooks and APIServices (they grant power here)")
}

// IntoRecreatedVar adds the flag that writes keys into a namespace or CRD
// created again since the purge.
func IntoRecreatedVar(f *pflag.FlagSet, into *bool) {
	f.BoolVar(into, strings.TrimPrefix(flagnames.IntoRecreated, "--"), false,
		"also write back keys whose namespace or CustomResourceDefinition was created again since the purge (refused without it: they would join a namespace or CRD they never belonged to)")
}
