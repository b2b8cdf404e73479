package cmd

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/regghost/regghost/internal/cli"
	"github.com/regghost/regghost/internal/render"
	"github.com/regghost/regghost/pkg/members"
	"github.com/regghost/regghost/pkg/session"
)

type membersOptions struct {
	*render.PrintFlags
	reads   session.Reads
	keys    string
	hash    string
	current bool
	// interval is the time between the two hash samples; maxKeys how
	// many differing keys are listed (0: all).
	interval time.Duration
	maxKeys  int
	opts     members.Options
}

// newMembersCmd is `regghost members`: it compares the members of the
// cluster and names the keys that differ and the member that is wrong.
func newMembersCmd(g *globalOptions) *cobra.Command {
	o := &membersOptions{reads: members.Reads(), PrintFlags: render.NewPrintFlags(false, "table", "wide")}
	c := &cobra.Command{
		Use:   "members",
		Short: "Compare etcd's members: the keys that differ and which member is wrong (read-only)",
		Args:  cobra.NoArgs,
		RunE:  runE(g, o),
	}
	f := c.Flags()
	o.AddFlags(c)
	f.StringVar(&o.keys, "compare-keys", members.KeysAuto, "when to compare the keys one by one: "+strings.Join(members.KeysModes, ", ")+
		" (auto: unless every member's full hash agrees; mismatch: unless the hashes agree)")
	f.StringVar(&o.hash, "hash", members.HashCompaction, "which HashKV to compare: "+strings.Join(members.HashModes, ", ")+
		" (compaction: the hash each member kept from the newest compaction, read at no cost; full: a scan of each member's keyspace, one member at a time, during which that member commits no write)")
	f.BoolVar(&o.current, "current", false, "compare the current values (each member at its own revision) instead of the keys at one shared revision")
	f.DurationVar(&o.interval, "interval", members.DefaultInterval, "time between the two hash samples")
	f.IntVar(&o.maxKeys, "max-keys", members.DefaultMaxKeys, "how many differing keys are listed one by one (0: all); the groups count them all")
	cli.ReadsVar(f, &o.reads, membersPaceHelp)
	c.AddCommand(newMembersReplaceCmd(g))
	return c
}

// complete turns the flags into pkg/members' options.
func (o *membersOptions) complete(*globalOptions, *cobra.Command, []string) error {
	maxKeys := o.maxKeys
	if maxKeys == 0 {
		maxKeys = -1
	}
	o.opts = members.Options{Reads: o.reads, Keys: o.keys, Hash: o.hash, Current: o.current, Interval: o.interval, MaxKeys: maxKeys}
	return nil
}

func (o *membersOptions) validate(g *globalOptions) error {
	if g.DB != "" {
		return cli.Usage("--db %s reads one db file, and members compares the live members of a cluster: drop --db", g.DB)
	}
	if o.interval <= 0 {
		return cli.Usage("--interval must be positive, got %s", o.interval)
	}
	if o.maxKeys < 0 {
		return cli.Usage("--max-keys must be 0 (all) or more, got %d", o.maxKeys)
	}
	if !slices.Contains(members.HashModes, o.hash) {
		return cli.Usage("--hash %q: want one of %s", o.hash, strings.Join(members.HashModes, ", "))
	}
	if !slices.Contains(members.KeysModes, o.keys) {
		return cli.Usage("--compare-keys %q: want one of %s", o.keys, strings.Join(members.KeysModes, ", "))
	}
	if o.current && o.keys == members.KeysNever {
		return cli.Usage("--current says how to compare the keys, and --compare-keys never leaves them out: drop one")
	}
	if err := cli.CheckReads(o.reads); err != nil {
		return err
	}
	if err := o.opts.Validate(); err != nil {
		return cli.Usage("%v", err)
	}
	return nil
}

func (o *membersOptions) run(ctx context.Context, g *globalOptions, s genericiooptions.IOStreams) error {
	o.opts.Notices = g.Notices
	opts, done, err := members.Setup(ctx, &g.Settings, o.opts)
	if err != nil {
		return err
	}
	defer done()
	rep, err := members.Compare(ctx, opts)
	if err != nil {
		return err
	}
	if err := o.Print(s.Out, render.Members(rep)); err != nil {
		return err
	}
	if rep.Differ() {
		return cli.Exit(ExitGhosts, nil)
	}
	return cli.Failed(rep.Unsure())
}

// membersPaceHelp is --max-keys-per-second's help in members and members
// replace, which read each member at its own latency's pace.
const membersPaceHelp = "the most keys a second each member is read at: each read starts slow and speeds up while a probe of that member stays within 1.5x its idle latency, to leave the API server's writes room (0: no ceiling)"
