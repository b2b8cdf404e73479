package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/regghost/regghost/internal/render"
	"github.com/regghost/regghost/pkg/members"
	"github.com/regghost/regghost/pkg/nodeconfig"
	"github.com/regghost/regghost/pkg/notice"
	"github.com/regghost/regghost/pkg/session"
)

type membersReplaceOptions struct {
	writeFlags
	print *render.PrintFlags
	wait  time.Duration
	// reads say how each member's keyspace is read: its pace
	// (--max-keys-per-second, as members takes it).
	reads session.Reads
}

const membersReplaceLong = `members replace replaces the member whose data is wrong, or that does not answer, as
etcd's guides say, guarded: it copies the majority's data into it again.

Run it from any control-plane node, the member's own included: every change goes
through the other members' client URLs (a member stops as it applies its own removal),
and a later run on that node reaches the cluster through the client URLs the first run
recorded in --backup-dir, while the member's etcd is down or a learner.

It compares the members first (as regghost members does, key by key) and refuses unless
that comparison names MEMBER wrong by a quorum of the members, on its hash or its keys at
one revision; or MEMBER does not answer while every other member answers and they
agree. It refuses when another member does not answer, is behind, reports an error or
raised NOSPACE (the cluster is already degraded), when two members are wrong, beside a
learner, and on k3s, rke2 and OpenShift, whose supervisors own the member list (it names
their procedure).

From the removal to the promotion the cluster runs with one voter fewer: the plan says
what it still survives and what to do if another member fails meanwhile.

With --confirm it then: saves and verifies the snapshot of every member that answers into
--backup-dir (the evidence); moves the leadership to the majority member furthest along
when the leader is not of the majority (a new member copies from the leader); checks the
others once more; removes MEMBER and adds it back as a learner at its peer URLs; prints
what to run on its node (stop its etcd, move its data directory aside, never delete it,
start it on an empty one with --initial-cluster-state=existing); waits up to --wait for
the learner to catch up, promotes it, compares the members again until they agree, and
disarms CORRUPT. Each step is bounded by --command-timeout, the wait by --wait. When the
wait ends first, or the run is stopped (Ctrl-C), run it again once the member runs: it
takes the replacement up where it stopped.

Both comparisons read every member's keyspace, paced by --max-keys-per-second: the plan
says how long the one after the promotion takes (as long as the one before it, and a
quarter more) and refuses, dry run included, when it would not fit in --command-timeout,
naming a --command-timeout or --max-keys-per-second that would; a comparison that does not
finish in it is refused the same way.

regghost's writers' lock is held on an etcd lease from the evidence on. When it is lost
(etcd unreachable from here, or regghost paused, for over its 30s TTL) the run stops at
once, in the wait for the learner too, never changing the member list without it: it
says what was removed, added back or promoted, the replace.json it is taken up from and
the command that takes it up (exit 3; exit 1 before the removal: nothing was changed).

It never restores a member from a snapshot file: etcdutl snapshot restore makes a new
cluster.

Exit codes: 0 replaced (or the dry run), 3 not done yet (waiting for the learner, or the
members do not agree yet: run it again), 1 refused or error, 2 bad input.`

// newMembersReplaceCmd is `regghost members replace MEMBER`.
func newMembersReplaceCmd(g *globalOptions) *cobra.Command {
	c, _ := newMembersReplace(g)
	return c
}

// newMembersReplace is `regghost members replace MEMBER` and the options
// its flags fill.
func newMembersReplace(g *globalOptions) (*cobra.Command, *membersReplaceOptions) {
	o := &membersReplaceOptions{print: render.NewPrintFlags(false, "table", "wide"), reads: members.Reads()}
	c := &cobra.Command{
		Use:   "replace MEMBER",
		Short: "Replace a wrong or dead etcd member: evidence, remove, add back as a learner, promote, compare (a dry run without --confirm)",
		Long:  membersReplaceLong,
		Example: `  # say how m1 would be replaced: the evidence saved, the disk and time it takes, the steps
  regghost members replace m1

  # replace it, waiting up to 15 minutes for the learner to catch up
  regghost members replace m1 --confirm --wait 15m`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if g.DB != "" {
				return usageError("--db %s reads one db file; members replace works on the live members: drop --db", g.DB)
			}
			if err := validateMembersPace(o.reads); err != nil {
				return err
			}
			if err := o.print.Validate(); err != nil {
				return err
			}
			return o.run(c.Context(), g, args[0], replaceAgain(args[0], c.Flags()), c.InOrStdin(), c.OutOrStdout())
		},
	}
	o.print.AddFlags(c)
	o.add(c, "replace the member (without it: a dry run)", "directory the members' snapshots (the evidence) are saved under")
	c.Flags().DurationVar(&o.wait, "wait", 10*time.Minute, "how long to wait for the learner to start on its node and catch up (0: add it and stop; run the command again once it runs)")
	addMembersPace(c.Flags(), &o.reads)
	return c, o
}

// compareOptions are how the members are reached and compared, as the
// flags say: every key (as regghost members --compare-keys always), at
// --max-keys-per-second.
func (o *membersReplaceOptions) compareOptions(member string, say notice.Func) members.Options {
	return members.Options{Reads: o.reads, Keys: members.KeysAlways, Notices: say, Fallback: members.RecordedFallback(o.backupDir, member)}
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
	words := []string{"regghost", "members", "replace", shellWord(member), "--confirm"}
	if dir := f.Lookup("backup-dir"); dir != nil && dir.Value.String() != defaultBackupRoot {
		words = append(words, "--backup-dir", shellWord(dir.Value.String()))
	}
	for _, name := range []string{"command-timeout", "max-keys-per-second"} {
		if fl := f.Lookup(name); fl != nil && fl.Value.String() != fl.DefValue {
			words = append(words, "--"+name, shellWord(fl.Value.String()))
		}
	}
	return strings.Join(words, " ")
}

// shellWord is s as one word of a POSIX shell: as it is when it holds
// nothing the shell reads otherwise, else in single quotes.
func shellWord(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@%+,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func (o *membersReplaceOptions) run(parent context.Context, g *globalOptions, member, again string, in io.Reader, out io.Writer) error {
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
	ro := members.ReplaceOptions{Compare: opts, Member: member, EvidenceRoot: o.backupDir, Wait: o.wait, StepTimeout: g.Etcd.CommandTimeout, Node: node,
		Again: again}
	plan, err := members.Replace(ctx, ro)
	if err != nil || !o.confirm || plan.Stage != members.StagePlanned {
		return o.finish(out, plan, err)
	}
	if err := o.print.Print(o.print.PlanWriter(out, g.errOut), render.MembersReplacePlan(plan)); err != nil {
		return err
	}
	if err := o.ask(in, g.errOut, fmt.Sprintf("Replace etcd member %s (remove it, add it back as a learner)?", member)); err != nil {
		return err
	}
	ro.Confirm, ro.Shown = true, plan
	res, err := members.Replace(ctx, ro)
	return o.finish(out, res, err)
}

// finish prints what Replace did and turns its error into the exit code.
func (o *membersReplaceOptions) finish(out io.Writer, res *members.Replacement, err error) error {
	if res != nil {
		if perr := o.print.Print(out, render.MembersReplace(res)); perr != nil && err == nil {
			err = perr
		}
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, members.ErrLearnerWaiting), errors.Is(err, members.ErrStoppedMidway), res != nil && res.Stage == members.StageDiffers:
		// Not done yet: the next run takes the replacement up.
		return &exitError{code: ExitGhosts, err: err}
	}
	return failed(err)
}
