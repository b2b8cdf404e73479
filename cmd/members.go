package cmd

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/regghost/regghost/internal/render"
	"github.com/regghost/regghost/pkg/members"
	"github.com/regghost/regghost/pkg/plural"
	"github.com/regghost/regghost/pkg/session"
)

type membersOptions struct {
	print   *render.PrintFlags
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

const membersLong = `members compares the members of one etcd cluster, for when they disagree: a pod
found on two API servers and not the third, a CORRUPT alarm, "etcdctl endpoint hashkv"
showing different hashes. It names the keys that differ and the member that is wrong.

It works from any control-plane node, the sick member's own included: the endpoints
given (kubeadm's manifest names only https://127.0.0.1:2379) are asked who they are,
and the members are then reached at their own client URLs from the member list.

It reads, for every member, its role, raft applied index, revision, compacted revision,
db size and alarms. A member that does not answer is named "not answering" and left
out. A member that has not applied what the others had, once given --interval to catch
up, is "behind" (with how far): it is left out and never named wrong.

The hashes (--hash) are asked of one member at a time, never all at once: by default
the HashKV each member kept from the newest compaction (etcd computes it while
compacting; reading it costs nothing), which etcd's own compaction hash check compares;
--hash full scans each member's keyspace at the lowest current revision (the member
commits no write meanwhile), sampled twice --interval apart when they disagree.

The keys (--compare-keys auto: unless a full hash agrees) are read from every member on
its own (serializable reads at one shared revision, paced by each member's own latency up
to --max-keys-per-second) and
merged key by key: memory holds a hash of each value, never the values. Each differing
key is named with the members that hold it, each copy's SHA-256, create and mod revision
and version, and the object's kind; the differences are grouped by member and kind
(missing, extra, value, revision). When the members' revisions diverged (etcd 3.5's
consistent-index bug), the current values are compared instead, and it says so. The
leases and member lists each member holds are compared too, on two reads.

The wrong member is named by majority: the members outside a group a quorum of the
members share. None is named when no group has a quorum, or when the hashes split the
members differently at the two samples. It changes nothing.

Exit codes: 0 every member agrees, 3 they differ, 1 error (or a member did not answer,
or is behind), 2 bad input.`

const membersExamples = `  # compare the members: their hashes, then their keys when the hashes differ
  regghost members

  # the same, with every column whole
  regghost members -o wide

  # the groups of keys that differ, for a script
  regghost members -o json | jq '.keys.groups'

  # compare the keys one by one even when the hashes agree
  regghost members --compare-keys always

  # keep every differing key of the current revision as evidence
  regghost members --current --max-keys 0 -o json > members.json`

// newMembersCmd is `regghost members`: it compares the members of the
// cluster and names the keys that differ and the member that is wrong.
func newMembersCmd(g *globalOptions) *cobra.Command {
	o := &membersOptions{reads: members.Reads(), print: render.NewPrintFlags(false, "table", "wide")}
	c := &cobra.Command{
		Use:     "members",
		Short:   "Compare etcd's members: the keys that differ and which member is wrong (read-only)",
		Long:    membersLong,
		Example: membersExamples,
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			o.complete()
			if err := o.validate(g); err != nil {
				return err
			}
			return o.run(c.Context(), g, c.OutOrStdout())
		},
	}
	f := c.Flags()
	o.print.AddFlags(c)
	f.StringVar(&o.keys, "compare-keys", members.KeysAuto, "when to compare the keys one by one: "+strings.Join(members.KeysModes, ", ")+
		" (auto: unless every member's full hash agrees; mismatch: unless the hashes agree)")
	f.StringVar(&o.hash, "hash", members.HashCompaction, "which HashKV to compare: "+strings.Join(members.HashModes, ", ")+
		" (compaction: the hash each member kept from the newest compaction, read at no cost; full: a scan of each member's keyspace, one member at a time, during which that member commits no write)")
	f.BoolVar(&o.current, "current", false, "compare the current values (each member at its own revision) instead of the keys at one shared revision")
	f.DurationVar(&o.interval, "interval", members.DefaultInterval, "time between the two hash samples")
	f.IntVar(&o.maxKeys, "max-keys", members.DefaultMaxKeys, "how many differing keys are listed one by one (0: all); the groups count them all")
	f.Int64Var(&o.reads.PageSize, "page-size", o.reads.PageSize, "keys per etcd range request when paging (etcd older than 3.7, or --stream=false)")
	addMembersPace(f, &o.reads)
	f.BoolVar(&o.reads.Stream, "stream", o.reads.Stream, "read with etcd's RangeStream where the server has it (3.7+)")
	c.AddCommand(newMembersReplaceCmd(g))
	return c
}

// complete turns the flags into pkg/members' options.
func (o *membersOptions) complete() {
	maxKeys := o.maxKeys
	if maxKeys == 0 {
		maxKeys = -1
	}
	o.opts = members.Options{Reads: o.reads, Keys: o.keys, Hash: o.hash, Current: o.current, Interval: o.interval, MaxKeys: maxKeys}
}

func (o *membersOptions) validate(g *globalOptions) error {
	if g.DB != "" {
		return usageError("--db %s reads one db file, and members compares the live members of a cluster: drop --db", g.DB)
	}
	if o.interval <= 0 {
		return usageError("--interval must be positive, got %s", o.interval)
	}
	if o.maxKeys < 0 {
		return usageError("--max-keys must be 0 (all) or more, got %d", o.maxKeys)
	}
	if !slices.Contains(members.HashModes, o.hash) {
		return usageError("--hash %q: want one of %s", o.hash, strings.Join(members.HashModes, ", "))
	}
	if !slices.Contains(members.KeysModes, o.keys) {
		return usageError("--compare-keys %q: want one of %s", o.keys, strings.Join(members.KeysModes, ", "))
	}
	if o.current && o.keys == members.KeysNever {
		return usageError("--current says how to compare the keys, and --compare-keys never leaves them out: drop one")
	}
	if o.reads.PageSize <= 0 || o.reads.PageSize > 10000 {
		return usageError("--page-size must be between 1 and 10000, got %d", o.reads.PageSize)
	}
	if err := validateMembersPace(o.reads); err != nil {
		return err
	}
	if err := o.opts.Validate(); err != nil {
		return usageError("%v", err)
	}
	return o.print.Validate()
}

func (o *membersOptions) run(ctx context.Context, g *globalOptions, out io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, g.Etcd.CommandTimeout)
	defer cancel()
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
	if err := o.print.Print(out, render.Members(rep)); err != nil {
		return err
	}
	switch {
	case rep.Verdict.Unknown:
		return failed(fmt.Errorf("could not tell whether the members agree: %s", rep.Verdict.Refused))
	case rep.Differ():
		return &exitError{code: ExitGhosts}
	case len(rep.Verdict.NotCompared) > 0:
		return failed(fmt.Errorf("%s did not answer and %s not compared", strings.Join(rep.Verdict.NotCompared, ", "), plural.Pick(len(rep.Verdict.NotCompared), "was", "were")))
	case len(rep.Verdict.Behind) > 0:
		return failed(fmt.Errorf("%s %s behind and %s not compared: compare again once caught up", strings.Join(rep.Verdict.Behind, ", "),
			plural.Be(len(rep.Verdict.Behind)), plural.Pick(len(rep.Verdict.Behind), "was", "were")))
	}
	return nil
}

// addMembersPace adds --max-keys-per-second, the pace of each member's
// keyspace read, as members and members replace take it: one name, one
// default (members.DefaultMaxKeysPerSecond, from reads) and one help.
func addMembersPace(f *pflag.FlagSet, reads *session.Reads) {
	f.IntVar(&reads.MaxKeysPerSecond, "max-keys-per-second", reads.MaxKeysPerSecond,
		"the most keys a second each member is read at: each read starts slow and speeds up while a probe of that member stays within 1.5x its idle latency, to leave the API server's writes room (0: no ceiling)")
}

// validateMembersPace refuses a negative --max-keys-per-second.
func validateMembersPace(reads session.Reads) error {
	if reads.MaxKeysPerSecond < 0 {
		return usageError("--max-keys-per-second must be 0 (no limit) or more, got %d", reads.MaxKeysPerSecond)
	}
	return nil
}
