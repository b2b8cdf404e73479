// Package cmd holds regghost's cobra commands: flags, wiring and output.
// Everything they do is done by the packages under pkg/.
package cmd

import (
	"io"
	"os"
	"runtime/pprof"
	"time"

	"github.com/spf13/cobra"

	"github.com/regghost/regghost/internal/cli"
	"github.com/regghost/regghost/internal/help"
	"github.com/regghost/regghost/internal/render"
	"github.com/regghost/regghost/pkg/version"
)

// Exit codes, documented in the README (cli's).
const (
	ExitOK     = cli.ExitOK
	ExitError  = cli.ExitError
	ExitUsage  = cli.ExitUsage
	ExitGhosts = cli.ExitGhosts
)

// clock is regghost's time: ages, stuck thresholds and backup names are
// read from it (the golden tests fix it).
var clock = time.Now

// NewRoot builds the regghost command tree writing to out and errOut.
func NewRoot(in io.Reader, out, errOut io.Writer) *cobra.Command {
	g := &globalOptions{}
	root := &cobra.Command{
		Use:           "regghost",
		Short:         "Find and safely remove ghost resources in a Kubernetes cluster's etcd",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.Get().String(),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetIn(in)
	root.SetOut(out)
	root.SetErr(errOut)
	root.SetFlagErrorFunc(cli.FlagError)
	cli.SettingsFlags(root.PersistentFlags(), &g.Settings, &g.verbosity, &g.cpuProfile)
	root.PersistentPreRunE = func(c *cobra.Command, _ []string) error {
		if err := g.startProfile(); err != nil {
			return err
		}
		g.noteGiven(c.Root().PersistentFlags())
		if err := cli.FillFromEnv(c.Root().PersistentFlags()); err != nil {
			return err
		}
		g.errOut = c.ErrOrStderr()
		g.Notices = render.Notices(g.errOut)
		if err := cli.LibraryLogs(g.verbosity, g.errOut); err != nil {
			return err
		}
		if err := cli.CheckDurations(c); err != nil {
			return err
		}
		if err := g.CheckFlags(); err != nil {
			return cli.Usage("%v", err)
		}
		g.Etcd.AskPassword = cli.PasswordAsker(in, errOut, g.Etcd.User)
		return nil
	}
	root.AddCommand(newScanCmd(g), newGetCmd(g), newPurgeCmd(g), newRestoreCmd(g), newSnapshotCmd(g), newBackupCmd(), newLsCmd(g), newDiffCmd(g), newVersionsCmd(g), newMigrateCmd(g), newUnstickCmd(g), newDanglingCmd(g), newRecoverCmd(g), newHistoryCmd(g), newServeCmd(g), newSpaceCmd(g), newMembersCmd(g), newLeasesCmd(g), newVersionCmd(), help.OptionsCommand(), newOverridesCmd())
	help.Group(root)
	help.Set(root)
	cli.UsageArgs(root)
	cli.Completions(root, completing{g})
	return root
}

// Execute runs regghost with the process's arguments and returns its exit code.
func Execute() int {
	return Run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
}

// Run runs regghost with args and returns its exit code. Errors are printed
// as one line on errOut.
func Run(args []string, in io.Reader, out, errOut io.Writer) int {
	cli.SilenceLibraryLogs()
	root := NewRoot(in, out, errOut)
	root.SetArgs(args)
	if cli.UnknownInGroup(root, args, errOut) {
		return ExitUsage
	}
	err := root.Execute()
	// Flush a --cpuprofile whatever the outcome; a no-op when none runs.
	pprof.StopCPUProfile()
	return cli.Report(errOut, err)
}
