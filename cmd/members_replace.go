package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/regghost/regghost/internal/cli"
	"github.com/regghost/regghost/internal/render"
	"github.com/regghost/regghost/pkg/members"
	"github.com/regghost/regghost/pkg/nodeconfig"
	"github.com/regghost/regghost/pkg/notice"
	"github.com/regghost/regghost/pkg/session"
)

type membersReplaceOptions struct {
	unbounded
	cli.WriteFlags
	*render.PrintFlags
	wait time.Duration
	// reads say how each member's keyspace is read: its pace
	// (--max-keys-per-second, as members takes it).
	reads session.Reads
	// Completed: MEMBER, and the command that takes its replacement up.
	member, again string
}

// newMembersReplaceCmd is `regghost members replace MEMBER`.
func newMembersReplaceCmd(g *globalOptions) *cobra.Command {
	c, _ := newMembersReplace(g)
	return c
}

// newMembersReplace is `regghost members replace MEMBER` and the options
// its flags fill.
func newMembersReplace(g *globalOptions) (*cobra.Command, *membersReplaceOptions) {
	o := &membersReplaceOptions{PrintFlags: render.NewPrintFlags(false, "table", "wide"), reads: members.Reads()}
	c := &cobra.Command{
		Use:   "replace MEMBER",
		Short: "Replace a wrong or dead etcd member: evidence, remove, add back as a learner, promote, compare (a dry run without --confirm)",
		Args:  cobra.ExactArgs(1),
		RunE:  runE(g, o),
	}
	o.AddFlags(c)
	o.Add(c, "replace the member (without it: a dry run)", "directory the members' snapshots (the evidence) are saved under")
	c.Flags().DurationVar(&o.wait, "wait", 10*time.Minute, "how long to wait for the learner to start on its node and catch up (0: add it and stop; run the command again once it runs)")
	c.Flags().IntVar(&o.reads.MaxKeysPerSecond, "max-keys-per-second", o.reads.MaxKeysPerSecond, membersPaceHelp)
	return c, o
}

// compareOptions are how the members are reached and compared, as the
// flags say: every key (as regghost members --compare-keys always), at
// --max-keys-per-second.
func (o *membersReplaceOptions) compareOptions(member string, say notice.Func) members.Options {
	return members.Options{Reads: o.reads, Keys: members.KeysAlways, Notices: say, Fallback: members.RecordedFallback(o.BackupDir, member)}
}

// replaceAgain is the command that takes a replacement of member up, as
// printed on every way out that says to run it again: --confirm, the
// --backup-dir its record is under unless it is the default (given by
// flag or REGGHOST_BACKUP_DIR), and the --command-timeout and
// --max-keys-per-second given (the plan's time budget was made with
// them). The connection's settings are found again as this run found
// them (flags, ETCDCTL_*, the node's manifest, and the client URLs the
// record holds); --password is never printed.
func replaceAgain(member string, f *pflag.FlagSet) string {
	return cli.Again(f, []string{"regghost", "members", "replace", member, "--confirm"}, "backup-dir", "command-timeout", "max-keys-per-second")
}

// complete takes MEMBER and the command that takes its replacement up.
func (o *membersReplaceOptions) complete(_ *globalOptions, c *cobra.Command, args []string) error {
	o.member, o.again = args[0], replaceAgain(args[0], c.Flags())
	return nil
}

func (o *membersReplaceOptions) validate(g *globalOptions) error {
	if g.DB != "" {
		return cli.Usage("--db %s reads one db file; members replace works on the live members: drop --db", g.DB)
	}
	if err := cli.CheckReads(o.reads); err != nil {
		return err
	}
	return nil
}

func (o *membersReplaceOptions) run(parent context.Context, g *globalOptions, s genericiooptions.IOStreams) error {
	member := o.member
	// The password is asked before interrupts are caught: an interrupt at
	// its prompt ends the command.
	if err := g.Etcd.AskPasswordNow(); err != nil {
		return err
	}
	// A stop ends the wait for the learner (exit 3, the replacement taken
	// up by the next run), never a change of the member list half way.
	ctx, stop := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	defer stop()
	sctx, cancel := context.WithTimeout(ctx, g.Etcd.CommandTimeout)
	opts, done, err := members.Setup(sctx, &g.Settings, o.compareOptions(member, g.Notices))
	cancel()
	if err != nil {
		return err
	}
	defer done()
	node, _ := nodeconfig.DiscoverEtcd(g.NodeRoot)
	// Each step is bounded by --command-timeout, the learner's wait by
	// --wait: the time the snapshots take is not taken from the wait.
	ro := members.ReplaceOptions{Compare: opts, Member: member, EvidenceRoot: o.BackupDir, Wait: o.wait, StepTimeout: g.Etcd.CommandTimeout, Node: node,
		Again: o.again}
	plan, err := members.Replace(ctx, ro)
	if err != nil || !o.Confirm || plan.Stage != members.StagePlanned {
		return o.finish(s.Out, plan, err)
	}
	if err := o.Print(o.PlanWriter(s.Out, s.ErrOut), render.MembersReplacePlan(plan)); err != nil {
		return err
	}
	if err := o.Ask(s.In, s.ErrOut, fmt.Sprintf("Replace etcd member %s (remove it, add it back as a learner)?", member)); err != nil {
		return err
	}
	ro.Confirm, ro.Shown = true, plan
	res, err := members.Replace(ctx, ro)
	return o.finish(s.Out, res, err)
}

// finish prints what Replace did and turns its error into the exit code.
func (o *membersReplaceOptions) finish(out io.Writer, res *members.Replacement, err error) error {
	if res != nil {
		if perr := o.Print(out, render.MembersReplace(res)); perr != nil && err == nil {
			err = perr
		}
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, members.ErrLearnerWaiting), errors.Is(err, members.ErrStoppedMidway), res != nil && res.Stage == members.StageDiffers:
		// Not done yet: the next run takes the replacement up.
		return cli.Exit(ExitGhosts, err)
	}
	return cli.Failed(err)
}
