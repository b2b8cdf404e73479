package render

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/regghost/regghost/pkg/members"
	"github.com/regghost/regghost/pkg/plural"
	"github.com/regghost/regghost/pkg/table"
)

// Members is the comparison of etcd's members in every form -o can ask
// for: the members' evidence, the verdict, the differing keys grouped and
// one by one, the leases and member lists, and what was not compared.
func Members(r *members.Report) Output {
	return Output{Doc: r, Human: func(w io.Writer, wide, noHeaders bool) error {
		return writeMembers(w, r, wide, noHeaders)
	}}
}

func writeMembers(out io.Writer, r *members.Report, wide, noHeaders bool) error {
	head := fmt.Sprintf("etcd cluster %s, %s", table.OrDash(r.ClusterID), plural.Of(len(r.Members), "member"))
	if n := len(r.Samples); n > 0 {
		s := r.Samples[n-1]
		switch {
		case s.Kind == members.HashCompaction && s.Revision == 0:
			head += ", no hash compared (no compaction yet)"
		case s.Kind == members.HashCompaction:
			head += fmt.Sprintf(", their hashes kept from compaction %d compared", s.Revision)
		default:
			head += fmt.Sprintf(", hashed at revision %d", s.Revision)
		}
		if n > 1 {
			head += fmt.Sprintf(" (HashKV sampled twice, %gs apart: at revision %d, then %d)", r.Interval, r.Samples[0].Revision, s.Revision)
		}
	}
	table.Wrapped(out, head+".")
	fmt.Fprintln(out)
	if err := membersEvidence(out, r, wide, noHeaders); err != nil {
		return err
	}
	for _, a := range r.ClusterAlarms {
		table.Wrapped(out, fmt.Sprintf("Alarm %s is raised on member 0: the whole cluster.", a))
	}
	fmt.Fprintln(out)
	membersVerdict(out, r.Verdict)
	fmt.Fprintln(out)
	if err := membersKeys(out, r.Keys, wide, noHeaders); err != nil {
		return err
	}
	fmt.Fprintln(out)
	membersLeases(out, r.Leases)
	membersLists(out, r.Membership)
	if len(r.Notes) > 0 {
		fmt.Fprintln(out)
		for _, n := range r.Notes {
			table.Para(out, "Note: ", "  ", n+".")
		}
	}
	fmt.Fprintln(out)
	fmt.Fprintln(out, "Not compared:")
	for _, n := range r.NotCompared {
		table.Para(out, "  - ", "    ", n+".")
	}
	fmt.Fprintln(out)
	table.Wrapped(out, "Nothing was changed: members only reads.")
	return nil
}

// membersEvidence is the table of the members: role, raft applied index,
// revisions, db size, alarms and the last hash (wide: every sample's).
func membersEvidence(out io.Writer, r *members.Report, wide, noHeaders bool) error {
	hdr := []string{"MEMBER", "ROLE", "APPLIED", "REVISION", "COMPACTED", "DB SIZE", "ALARMS", "HASH"}
	if wide {
		hdr = []string{"MEMBER", "ID", "ENDPOINT", "VERSION", "ROLE", "TERM", "RAFT INDEX", "APPLIED", "REVISION", "COMPACTED", "DB SIZE", "IN USE", "ALARMS"}
		for _, s := range r.Samples {
			hdr = append(hdr, fmt.Sprintf("HASH@%d", s.Revision))
		}
	}
	if noHeaders {
		hdr = nil
	}
	t := table.New(out, hdr...).CutFirst(0)
	for _, m := range r.Members {
		role := "follower"
		switch {
		case m.Unreachable != "":
			role = "not answering: " + m.Unreachable
		case m.Behind != nil:
			role = "behind by " + plural.Of(int(m.Behind.Entries), "entry")
		case m.Leader:
			role = "leader"
		case m.Learner:
			role = "learner"
		}
		alarms := table.OrDash(strings.Join(m.Alarms, ","))
		var hashes []string
		for _, s := range r.Samples {
			hashes = append(hashes, memberHash(s, m.Name))
		}
		last := "-"
		if len(hashes) > 0 {
			last = hashes[len(hashes)-1]
		}
		if m.Unreachable != "" {
			cells := []string{m.Name, role, "?", "?", "?", "?", alarms, "?"}
			if wide {
				cells = []string{m.Name, m.ID, table.OrDash(m.Endpoint), "?", role, "?", "?", "?", "?", "?", "?", "?", alarms}
				cells = append(cells, hashes...)
			}
			if err := t.Append(cells); err != nil {
				return err
			}
			continue
		}
		cells := []string{m.Name, role, strconv.FormatUint(m.AppliedIndex, 10), strconv.FormatInt(m.Revision, 10),
			strconv.FormatInt(m.CompactRevision, 10), Bytes(m.DBSize), alarms, last}
		if wide {
			cells = []string{m.Name, m.ID, m.Endpoint, table.OrDash(m.Version), role, strconv.FormatUint(m.RaftTerm, 10),
				strconv.FormatUint(m.RaftIndex, 10), strconv.FormatUint(m.AppliedIndex, 10), strconv.FormatInt(m.Revision, 10),
				strconv.FormatInt(m.CompactRevision, 10), Bytes(m.DBSize), Bytes(m.DBSizeInUse), alarms}
			cells = append(cells, hashes...)
		}
		if err := t.Append(cells); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	for _, s := range r.Samples {
		if !s.Comparable && s.Why != "" && s.Revision > 0 {
			table.Wrapped(out, fmt.Sprintf("The hashes at revision %d cannot be compared: %s.", s.Revision, s.Why))
		}
		for _, m := range s.Members {
			if m.Error != "" {
				table.Wrapped(out, fmt.Sprintf("%s at revision %d: %s.", m.Member, s.Revision, m.Error))
			}
		}
	}
	return nil
}

// memberHash is member's hash in sample s, "?" when none was read.
func memberHash(s members.Sample, member string) string {
	for _, m := range s.Members {
		if m.Member == member && m.Hash != "" {
			return m.Hash
		}
	}
	return "?"
}

// membersVerdict says which member is wrong, or why none is named.
func membersVerdict(out io.Writer, v members.Verdict) {
	switch {
	case v.Agree:
		table.Wrapped(out, "The members agree: "+v.Reason+".")
	case v.Unknown:
		table.Wrapped(out, "Whether the members agree is not known: "+v.Refused+".")
	case v.Refused != "":
		table.Wrapped(out, fmt.Sprintf("The members differ (%s), and no member is named wrong: %s.", membersBasis(v.Basis), v.Refused))
	default:
		table.Wrapped(out, fmt.Sprintf("Wrong: %s (%s). %s.", strings.Join(v.Wrong, ", "), membersBasis(v.Basis), v.Reason))
	}
	if len(v.NotCompared) > 0 {
		table.Wrapped(out, fmt.Sprintf("Not compared: %s, which did not answer.", strings.Join(v.NotCompared, ", ")))
	}
	if len(v.Behind) > 0 {
		table.Wrapped(out, fmt.Sprintf("Not compared: %s, behind (not wrong): compare again once caught up.", strings.Join(v.Behind, ", ")))
	}
}

func membersBasis(basis string) string {
	switch basis {
	case members.BasisHash:
		return "by their HashKV"
	case members.BasisKeys:
		return "by their keys"
	case members.BasisLeases:
		return "by their leases"
	case members.BasisMembership:
		return "by their member lists"
	}
	return basis
}

// membersKeys says how the keys were compared, the differences grouped by
// member and kind, and the differing keys one by one.
func membersKeys(out io.Writer, k members.KeyComparison, wide, noHeaders bool) error {
	switch k.Mode {
	case members.ModeNone:
		table.Wrapped(out, "The keys were not compared one by one: "+k.Why+".")
		return nil
	case members.ModeRevision:
		table.Wrapped(out, fmt.Sprintf("Keys compared at revision %d, each member read on its own with serializable reads: %s, %s differ.",
			k.Revision, plural.Of(int(k.Distinct), "key"), membersCount(k.Differ)))
	default:
		table.Wrapped(out, fmt.Sprintf("Current values compared, each member read on its own with serializable reads: %s, %s differ.",
			plural.Of(int(k.Distinct), "key"), membersCount(k.Differ)))
	}
	table.Para(out, "  (", "   ", k.Why+".)")
	if len(k.Groups) == 0 {
		return nil
	}
	fmt.Fprintln(out)
	for _, g := range k.Groups {
		table.Para(out, "  ", "    ", membersGroup(g))
	}
	fmt.Fprintln(out)
	hdr := []string{"KEY", "KIND", "MEMBER", "DIFFERENCE", "MAJORITY'S COPY", "MEMBER'S COPY"}
	if noHeaders {
		hdr = nil
	}
	t := table.New(out, hdr...).CutFirst(4, 5)
	for _, d := range k.Keys {
		kind := d.Kind
		switch {
		case d.Encrypted:
			kind = "(encrypted)"
		case kind == "":
			kind = "-"
		}
		majority := "-"
		for _, s := range d.States {
			if s.Difference == "" {
				majority = membersCopy(s, wide)
				break
			}
		}
		for _, s := range d.States {
			if s.Difference == "" {
				continue
			}
			if err := t.Append([]string{d.Key, kind, s.Member, s.Difference, majority, membersCopy(s, wide)}); err != nil {
				return err
			}
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	if k.Unlisted > 0 {
		table.Wrapped(out, fmt.Sprintf("%s more differ: -o json lists up to --max-keys of them (0: all), the groups above count them all.", membersCount(k.Unlisted)))
	}
	return nil
}

// membersCopy is one copy of a key: absent, or its mod revision and the
// start of its value's SHA-256 (wide: every revision and the whole hash).
func membersCopy(s members.KeyState, wide bool) string {
	if !s.Present {
		return "absent"
	}
	if wide {
		return fmt.Sprintf("mod %d, create %d, version %d, lease %x, %d bytes, sha256 %s", s.ModRevision, s.CreateRevision, s.Version, s.Lease, s.Size, s.SHA256)
	}
	return fmt.Sprintf("rev %d, sha256 %.8s", s.ModRevision, s.SHA256)
}

// membersGroup says one group at a glance: "m3 lacks 1,204 keys, all
// written between revisions 4521 and 9876 (pods 1,200, events 4)."
func membersGroup(g members.Group) string {
	n := membersCount(g.Keys) + " " + membersNoun(g.Keys)
	var s string
	switch g.Difference {
	case members.Missing:
		s = fmt.Sprintf("%s lacks %s, %s", g.Member, n, membersWritten(g, "all written"))
	case members.Extra:
		s = fmt.Sprintf("%s holds %s the majority does not, %s on %s", g.Member, n, membersWritten(g, "written"), g.Member)
	case members.ValueDiffers:
		s = fmt.Sprintf("%s holds another value of %s, %s by the majority", g.Member, n, membersWritten(g, "last written"))
	case members.RevisionDiffers:
		s = fmt.Sprintf("%s holds the majority's value of %s at other revisions (the majority's %s)", g.Member, n, membersWritten(g, "written"))
	default:
		s = fmt.Sprintf("%s %s no copy a majority holds, %s", n, membersHasHave(g.Keys), membersWritten(g, "written"))
	}
	var res []string
	for i, c := range g.Resources {
		if i == 5 {
			res = append(res, plural.Of(len(g.Resources)-5, "more resource"))
			break
		}
		res = append(res, c.Resource+" "+membersCount(c.Keys))
	}
	return s + " (" + strings.Join(res, ", ") + ")."
}

// membersWritten is "written at revision 12" or "written between revisions
// 12 and 40".
func membersWritten(g members.Group, verb string) string {
	if g.FirstRevision == g.LastRevision {
		return fmt.Sprintf("%s at revision %d", strings.TrimPrefix(verb, "all "), g.FirstRevision)
	}
	return fmt.Sprintf("%s between revisions %d and %d", verb, g.FirstRevision, g.LastRevision)
}

func membersNoun(n int64) string {
	if n == 1 {
		return "key"
	}
	return "keys"
}

func membersHasHave(n int64) string {
	if n == 1 {
		return "has"
	}
	return "have"
}

// membersLeases says whether every member holds the same leases.
func membersLeases(out io.Writer, l members.LeaseComparison) {
	switch {
	case !l.Compared:
		table.Wrapped(out, "Leases: not compared: "+l.Error+".")
		return
	case len(l.Differ) == 0:
		n := 0
		if len(l.Counts) > 0 {
			n = l.Counts[0].Count
		}
		if n == 0 {
			table.Wrapped(out, "Leases: no member holds a lease.")
		} else {
			table.Wrapped(out, fmt.Sprintf("Leases: every member holds the same %s.", plural.Of(n, "lease")))
		}
		return
	}
	var counts []string
	for _, c := range l.Counts {
		counts = append(counts, fmt.Sprintf("%s %d", c.Member, c.Count))
	}
	table.Wrapped(out, fmt.Sprintf("Leases: %s held by some members only, in two reads (leases held: %s):", plural.Of(len(l.Differ), "lease"), strings.Join(counts, ", ")))
	for i, d := range l.Differ {
		if i == 20 {
			table.Para(out, "  ", "    ", fmt.Sprintf("and %d more (-o json lists them).", len(l.Differ)-20))
			break
		}
		table.Para(out, "  ", "    ", fmt.Sprintf("%s held by %s", d.ID, strings.Join(d.Holders, ", ")))
	}
}

// membersLists says whether every member holds the same member list.
func membersLists(out io.Writer, m members.MembershipComparison) {
	switch {
	case !m.Compared:
		table.Wrapped(out, "Member lists: not compared: "+m.Error+".")
		return
	case len(m.Views) <= 1:
		table.Wrapped(out, "Member lists: every member holds the same.")
		return
	}
	table.Wrapped(out, "Member lists: the members hold different ones:")
	for _, v := range m.Views {
		table.Para(out, "  ", "    ", fmt.Sprintf("%s: %s", strings.Join(v.HeldBy, ", "), strings.Join(v.List, "; ")))
	}
}

// membersCount is n with thousands separated by commas: 1,204.
func membersCount(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// MembersReplace is members replace's output: the steps, done or to do,
// what to run on the member's node, and the comparisons before and after.
func MembersReplace(r *members.Replacement) Output {
	return Output{Doc: r, Human: func(w io.Writer, wide, _ bool) error {
		return writeMembersReplace(w, r, wide, true)
	}}
}

// MembersReplacePlan is the plan --confirm shows before its question: a
// dry run's output without its last line.
func MembersReplacePlan(r *members.Replacement) Output {
	return Output{Doc: r, Human: func(w io.Writer, wide, _ bool) error {
		return writeMembersReplace(w, r, wide, false)
	}}
}

func writeMembersReplace(out io.Writer, r *members.Replacement, wide, dryRun bool) error {
	if r.Before != nil && (wide || r.Stage == members.StagePlanned) {
		if err := writeMembers(out, r.Before, wide, false); err != nil {
			return err
		}
		fmt.Fprintln(out)
	}
	fmt.Fprintf(out, "Replace %s (%s, peer URLs %s):\n", r.Member, table.OrDash(r.ID), strings.Join(r.PeerURLs, ","))
	if r.Why != "" {
		table.Para(out, "  ", "  ", "Why: "+r.Why+".")
	}
	for i, s := range r.Steps {
		table.Para(out, fmt.Sprintf("  %d. ", i+1), "     ", s)
	}
	if r.Window != nil && r.Stage != members.StageReplaced {
		fmt.Fprintln(out, "\nThe window:")
		for _, w := range r.Window.Words {
			table.Para(out, "  ", "  ", w)
		}
	}
	if len(r.Disk) > 0 && r.Stage != members.StageReplaced {
		membersDisk(out, r.Disk)
	}
	if r.Timing != nil && r.Stage != members.StageReplaced {
		fmt.Fprintln(out)
		table.Wrapped(out, membersTiming(r.Timing))
	}
	if len(r.Evidence) > 0 {
		fmt.Fprintln(out)
		// The directory has a line of its own: a path is never broken, and
		// the heading around it must not decide where a node's path wraps.
		fmt.Fprintln(out, "Evidence, saved and verified before anything was changed, in")
		table.Para(out, "  ", "  ", r.Dir+":")
		for _, e := range r.Evidence {
			path := e.Path
			if filepath.Dir(path) == filepath.Clean(r.Dir) {
				path = filepath.Base(path)
			}
			table.Para(out, "  ", "    ", fmt.Sprintf("%s: %s (revision %d, %d bytes, sha256 %s)", e.Member, path, e.Revision, e.Size, e.SHA256))
		}
	}
	if r.MovedLeaderTo != "" {
		fmt.Fprintf(out, "\nThe leadership moved from %s to %s.\n", r.MovedLeaderFrom, r.MovedLeaderTo)
	}
	if len(r.OnNode) > 0 && r.Stage != members.StageReplaced {
		fmt.Fprintf(out, "\nOn %s's node (regghost cannot start etcd there):\n", r.Member)
		for i, s := range r.OnNode {
			table.Para(out, fmt.Sprintf("  %d. ", i+1), "     ", s)
		}
	}
	if len(r.Notes) > 0 {
		fmt.Fprintln(out)
		for _, n := range r.Notes {
			table.Para(out, "Note: ", "  ", n+".")
		}
	}
	switch r.Stage {
	case members.StagePlanned:
		if dryRun {
			fmt.Fprintln(out, "\nDry run: nothing was changed; --confirm replaces it.")
		}
	case members.StageWaiting:
		fmt.Fprintln(out)
		table.Wrapped(out, fmt.Sprintf("%s was removed and added back as a learner (%s); it has not caught up yet. Once its etcd runs as said above, "+
			"run `%s` again: it promotes it and compares the members.", r.Member, r.LearnerID, membersAgain(r)))
	case members.StageReplaced:
		fmt.Fprintf(out, "\n%s was replaced (now %s): every member agrees, key by key.\n", r.Member, r.LearnerID)
		if len(r.Disarmed) > 0 {
			fmt.Fprintf(out, "Disarmed: %s.\n", strings.Join(r.Disarmed, ", "))
		}
	case members.StageDiffers:
		fmt.Fprintln(out)
		table.Wrapped(out, fmt.Sprintf("%s was promoted, and the members do not agree yet: run `%s` again "+
			"to compare them and disarm CORRUPT.", r.Member, membersAgain(r)))
	}
	return nil
}

// membersAgain is the command that takes the replacement up.
func membersAgain(r *members.Replacement) string {
	if r.Again != "" {
		return r.Again
	}
	return "regghost members replace " + r.Member + " --confirm"
}

// membersTiming says how long a comparison of the members takes against
// the time each step has: the one after the promotion reads as many keys.
func membersTiming(t *members.Timing) string {
	secs := func(s float64) string { return (time.Duration(math.Ceil(s)) * time.Second).String() }
	// flag is a --command-timeout value as the refusal names it: "7m".
	flag := func(s float64) string {
		if d := time.Duration(math.Ceil(s)) * time.Second; d%time.Minute != 0 {
			return d.String()
		}
		return fmt.Sprintf("%dm", int(math.Ceil(s))/60)
	}
	pace := fmt.Sprintf("at up to %d keys a second each (--max-keys-per-second)", t.PerSecond)
	if t.PerSecond <= 0 {
		pace = "unpaced (--max-keys-per-second 0)"
	}
	s := fmt.Sprintf("Time: the comparison after the promotion reads every member's keyspace again, as this one did (%s on one member, %s; it took %s): "+
		"planned at %s with a quarter to spare, ", plural.Of(t.Keys, "key"), pace, secs(t.Took), secs(t.Needs))
	if t.Fits {
		return s + fmt.Sprintf("within the --command-timeout %s each step has.", flag(t.Timeout))
	}
	ways := fmt.Sprintf("--command-timeout %s", flag(t.FitTimeout))
	if t.FitPerSecond > 0 {
		ways += fmt.Sprintf(" or --max-keys-per-second %d", t.FitPerSecond)
	}
	return s + fmt.Sprintf("more than the --command-timeout %s each step has: DOES NOT FIT; %s would.", flag(t.Timeout), ways)
}

// membersDisk is the disk budget of a replacement: each filesystem it
// writes on, what it has free, what is written there, what is left and
// what must stay free, and below it what is written.
func membersDisk(out io.Writer, disk []members.DiskBudget) {
	fmt.Fprintln(out)
	table.Wrapped(out, "Disk budget: every byte this run writes here, by filesystem, before the first write (each keeps its reserve free):")
	for _, d := range disk {
		left := Bytes(d.Left)
		if d.Left < 0 {
			left = "-" + Bytes(-d.Left)
		}
		fits := "fits"
		if !d.Fits {
			fits = "DOES NOT FIT"
		}
		table.Para(out, "  ", "    ", fmt.Sprintf("%s (device %s): %s free, %s written, %s left, %s reserve: %s",
			d.Dir, d.Device, Bytes(d.Free), Bytes(d.Written), left, Bytes(d.Reserve), fits))
		for _, w := range d.Writes {
			table.Para(out, "    - ", "      ", fmt.Sprintf("%s: %s (%s)", w.What, Bytes(w.Bytes), w.Path))
		}
	}
}
