package members

import (
	"fmt"
	"slices"
	"strings"

	"github.com/regghost/regghost/pkg/plural"
)

// hashFinding is what the hash samples say.
type hashFinding struct {
	// usable is set when the hashes can be judged: groups are the
	// members by hash at revision rev.
	usable bool
	groups [][]string
	rev    int64
	// kind is the samples' kind: HashCompaction or HashFull ("": none
	// taken).
	kind string
	// unstable says why the hashes cannot be trusted to name a member:
	// they split the members differently at the two samples.
	unstable string
	// why says why the hashes are not usable.
	why string
	// note says what the person should know of the samples.
	note string
}

// agree reports whether the hashes show every member compared agrees.
func (h hashFinding) agree() bool { return h.usable && len(h.groups) == 1 }

// hashesSay reads the samples: one that agreed at once; or two, which must
// split the members the same way to be judged. A disagreement the second
// sample does not repeat was in flight (a compaction, a member still
// applying); one that splits the members another way at the second sample
// is not judged.
func hashesSay(samples []Sample) hashFinding {
	if len(samples) == 0 {
		return hashFinding{why: "no hash was asked for"}
	}
	h := hashesOf(samples)
	h.kind = samples[0].Kind
	return h
}

func hashesOf(samples []Sample) hashFinding {
	last := samples[len(samples)-1]
	if len(samples) == 1 {
		if !last.Comparable {
			return hashFinding{why: last.Why, rev: last.Revision}
		}
		return hashFinding{usable: true, groups: last.Groups, rev: last.Revision}
	}
	first := samples[0]
	switch {
	case !last.Comparable:
		return hashFinding{why: last.Why, rev: last.Revision}
	case len(last.Groups) == 1:
		h := hashFinding{usable: true, groups: last.Groups, rev: last.Revision}
		if first.Comparable {
			h.note = fmt.Sprintf("at revision %d the hashes differed (%s); at revision %d they agree: "+
				"a compaction or a member still applying was in flight", first.Revision, groupWords(first.Groups), last.Revision)
		}
		return h
	case !first.Comparable:
		return hashFinding{why: fmt.Sprintf("the first sample could not be compared (%s), so the second one's split (%s) is not confirmed",
			first.Why, groupWords(last.Groups))}
	case samePartition(first.Groups, last.Groups):
		return hashFinding{usable: true, groups: last.Groups, rev: last.Revision}
	}
	return hashFinding{unstable: fmt.Sprintf("the hashes split the members one way at revision %d (%s) and another way at revision %d (%s): "+
		"the members still move; compare again once the cluster is quiet", first.Revision, groupWords(first.Groups), last.Revision, groupWords(last.Groups))}
}

// groupWords writes groups as "m0, m2 / m1".
func groupWords(groups [][]string) string {
	var parts []string
	for _, g := range groups {
		parts = append(parts, strings.Join(g, ", "))
	}
	return strings.Join(parts, " / ")
}

// decide makes the verdict: on the hashes when they can be judged and
// differ; else on the keys, when they were compared and differ; else on
// the leases, else on the member lists. With a quorum of the members on
// one side the others are wrong; without, none is named.
func (r *run) decide(h hashFinding, t *tally, leaseGroups, memberGroups [][]string) {
	v := &r.rep.Verdict
	total := r.voters()
	keysDiffer := t != nil && t.differ > 0
	switch {
	case h.unstable != "":
		v.Basis, v.Refused = BasisHash, h.unstable
	case h.usable && len(h.groups) > 1 && h.kind == HashCompaction:
		judge(v, BasisHash, h.groups, total, fmt.Sprintf("one hash of compaction %d", h.rev))
		if len(v.Wrong) > 0 {
			v.Reason += " (etcd's own compaction hash check, off by default, decides the same way on these hashes)"
		} else {
			v.Refused += " (etcd's own compaction hash check then raises CORRUPT on member 0, the whole cluster)"
		}
	case h.usable && len(h.groups) > 1:
		judge(v, BasisHash, h.groups, total, fmt.Sprintf("one hash at revision %d", h.rev))
	case keysDiffer:
		what := "the same copy of every key"
		if t.mode == ModeCurrent {
			what = "the same current value of every key"
		}
		judge(v, BasisKeys, t.partition(), total, what)
	case len(leaseGroups) > 1:
		judge(v, BasisLeases, leaseGroups, total, "the same leases")
	case len(memberGroups) > 1:
		judge(v, BasisMembership, memberGroups, total, "the same member list")
	case !h.usable && t == nil:
		v.Unknown = true
		v.Refused = "the hashes could not be compared (" + h.why + ") and the keys were not compared one by one"
	default:
		v.Agree = true
		v.Reason = r.agreement(h, t)
	}
	if v.Refused != "" && v.Reason == "" {
		v.Reason = v.Refused
	}
}

// agreement says what the members were found to agree on.
func (r *run) agreement(h hashFinding, t *tally) string {
	var parts []string
	switch {
	case h.agree() && h.kind == HashCompaction:
		parts = append(parts, fmt.Sprintf("every member holds one hash of compaction %d (%s)", h.rev, r.hashAt(h.rev)))
	case h.agree():
		parts = append(parts, fmt.Sprintf("every member holds one hash at revision %d (%s)", h.rev, r.hashAt(h.rev)))
	}
	if t != nil {
		if t.mode == ModeRevision {
			parts = append(parts, fmt.Sprintf("each of the %s is the same copy on every member at revision %d", plural.Of(r.rep.Keys.Distinct, "key"), r.rep.Keys.Revision))
		} else {
			parts = append(parts, fmt.Sprintf("each of the %s holds the same current value on every member", plural.Of(r.rep.Keys.Distinct, "key")))
		}
	}
	if r.rep.Leases.Compared {
		parts = append(parts, "every member holds the same leases")
	}
	if r.rep.Membership.Compared {
		parts = append(parts, "every member holds the same member list")
	}
	s := strings.Join(parts, "; ")
	if len(r.rep.Verdict.NotCompared) > 0 || len(r.rep.Verdict.Behind) > 0 {
		s = "of the members compared (" + leftOut(r.rep) + "), " + s
	}
	return s
}

// hashAt is the hash the last sample at rev found.
func (r *run) hashAt(rev int64) string {
	for _, s := range slices.Backward(r.rep.Samples) {
		if s.Revision == rev {
			for _, m := range s.Members {
				if m.Hash != "" {
					return m.Hash
				}
			}
		}
	}
	return "?"
}

// notes fill what is not compared and what else the person should know.
func (r *run) notes(h hashFinding) {
	rep := r.rep
	rep.NotCompared = []string{
		"the auth bucket (users, roles, whether auth is on): etcd serves it through raft and to the root role only; compare copies of the db files offline if it is in doubt",
		"lease TTLs: etcd answers TimeToLive from the leader for every member (a follower forwards it); which leases each member holds is compared",
		"the alarm bucket: alarms are raised through raft for the whole cluster; they are listed per member",
	}
	switch rep.Keys.Mode {
	case ModeRevision:
		covered := "HashKV covers them"
		if !h.usable {
			covered = "no hash that covers them was compared"
		}
		rep.NotCompared = append(rep.NotCompared, fmt.Sprintf("the older revisions key by key (from the compaction to revision %d): %s", rep.Keys.Revision, covered))
	case ModeCurrent:
		rep.NotCompared = append(rep.NotCompared, "the keys' revisions and versions: with current values only whether a member holds a key, and its value, are compared")
	}
	if h.kind == HashCompaction && h.usable && rep.Keys.Mode == ModeNone {
		rep.NotCompared = append(rep.NotCompared, fmt.Sprintf("the writes after revision %d: the hashes kept from compaction %d cover the revisions up to it, "+
			"and the keys were not compared one by one", h.rev, h.rev))
	}
	for _, s := range rep.Samples {
		for _, m := range s.Members {
			if m.Computed {
				rep.Notes = append(rep.Notes, fmt.Sprintf("%s held no hash kept from compaction %d (it started since) and computed one, "+
					"a scan of its keyspace", m.Member, s.Revision))
			}
		}
	}
	if h.note != "" {
		rep.Notes = append(rep.Notes, h.note)
	}
	if h.why != "" && h.unstable == "" && !(h.kind == HashCompaction && h.rev == 0) {
		rep.Notes = append(rep.Notes, "the hashes were not judged: "+h.why)
	}
	if rep.Verdict.Basis == BasisHash && len(rep.Verdict.Wrong) > 0 && rep.Keys.Mode == ModeRevision && rep.Keys.Differ == 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("every key is the same copy on every member at revision %d: the members differ in the older "+
			"revisions HashKV also covers (writes since the compaction, deletes)", rep.Keys.Revision))
	}
	if k := rep.Keys; k.Settled > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%s when first read and agreed when read again: writes in flight, not counted", plural.Verb(k.Settled, "key", "differed", "differed")))
	}
	if k := rep.Keys; k.NotRechecked > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d differing keys beyond the first %d were not read again: some may be writes in flight", k.NotRechecked, RecheckLimit))
	}
	for _, m := range rep.Members {
		if slices.Contains(m.Alarms, "CORRUPT") {
			rep.Notes = append(rep.Notes, fmt.Sprintf("etcd itself raised CORRUPT on %s: the cluster refuses writes while the alarm stands, "+
				"and %s still serves reads", m.Name, m.Name))
		}
		if m.Leader && slices.Contains(rep.Verdict.Wrong, m.Name) {
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s, which is wrong, leads the cluster: a member replaced now would copy its data from it "+
				"(etcd#8313); move the leadership to a member of the majority first", m.Name))
		}
	}
	if slices.Contains(rep.ClusterAlarms, "CORRUPT") {
		rep.Notes = append(rep.Notes, "etcd raised CORRUPT on member 0, the whole cluster: its own check found the hashes differ and could not tell which member is wrong")
	}
}
