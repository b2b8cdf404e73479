package members

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/regghost/regghost/pkg/plural"
)

// run is one comparison: the options, the report it fills and a client on
// each member that answered.
type run struct {
	opts  *Options
	rep   *Report
	conns []conn
	mu    sync.Mutex
}

// voters counts the members that are not learners: a quorum is more
// than half of them.
func (r *run) voters() int {
	n := 0
	for _, m := range r.rep.Members {
		if !m.Learner {
			n++
		}
	}
	return n
}

// names are the names of the members compared, in the order of conns.
func (r *run) names() []string {
	out := make([]string, len(r.conns))
	for i, c := range r.conns {
		out[i] = r.rep.Members[c.m].Name
	}
	return out
}

// Compare compares the members of the cluster o.Client reaches: their
// evidence, their hashes (o.Hash: kept from the newest compaction, or
// computed at the lowest current revision; each member in turn, never all
// at once), their keys one by one (o.Keys), their leases and member
// lists; and says which member is wrong by majority, or why it names none.
// A member that does not answer, or that is behind (settle), is left out
// and never named wrong. It only reads. An error means the comparison
// could not be made; members that differ are the report's verdict.
func Compare(ctx context.Context, o Options) (*Report, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o.progress("reading etcd's member list and every member's status")
	members, clusterAlarms, err := listMembers(ctx, &o)
	if err != nil {
		return nil, err
	}
	rep := &Report{Members: members, ClusterAlarms: clusterAlarms, Samples: []Sample{}, Interval: o.interval().Seconds()}
	r := &run{opts: &o, rep: rep}
	defer func() {
		for _, c := range r.conns {
			c.cli.Close()
		}
	}()
	for i := range rep.Members {
		m := &rep.Members[i]
		if m.Learner && m.Unreachable == "" {
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s is a learner and was not compared, nor counted in the quorum: etcd serves a learner "+
				"Status and serializable unary reads only (no HashKV, no stream), and it is still catching up", m.Name))
			continue
		}
		if m.Unreachable == "" {
			cli, err := o.dial(m.Endpoint)
			if err != nil {
				m.Unreachable = firstLine(err)
			} else {
				r.conns = append(r.conns, conn{m: i, ep: m.Endpoint, cli: cli})
			}
		}
		if m.Unreachable != "" {
			rep.Verdict.NotCompared = append(rep.Verdict.NotCompared, m.Name)
		}
	}
	if r.voters() == 1 {
		rep.Verdict = Verdict{Agree: true, Reason: "the cluster has one member: there is no other to compare it with"}
		rep.Keys = KeyComparison{Mode: ModeNone, Why: "one member", Groups: []Group{}, Keys: []KeyDiff{}}
		return rep, nil
	}
	if len(r.conns) < 2 {
		return nil, fmt.Errorf("only %d of the %d voting members answer (%s): there is nothing to compare", len(r.conns), r.voters(), unreachable(rep.Members))
	}
	r.settle(ctx)
	if len(r.conns) < 2 {
		rep.Verdict.Unknown = true
		rep.Verdict.Refused = fmt.Sprintf("only %s can be compared (%s)", names(r.names()), leftOut(rep))
		rep.Verdict.Reason = rep.Verdict.Refused
		rep.Keys = KeyComparison{Mode: ModeNone, Why: "fewer than two members to compare", Groups: []Group{}, Keys: []KeyDiff{}}
		r.notes(hashFinding{})
		return rep, nil
	}
	if kind := o.hash(); kind != HashNone {
		rep.Samples = append(rep.Samples, r.sample(ctx, kind))
		if s := rep.Samples[0]; kind == HashFull && (!s.Comparable || len(s.Groups) > 1) {
			o.progress("the hashes do not show that the members agree; sampling again in %s", o.interval())
			if err := sleep(ctx, o.interval()); err != nil {
				return nil, err
			}
			rep.Samples = append(rep.Samples, r.sample(ctx, kind))
		}
	}
	h := hashesSay(rep.Samples)
	var t *tally
	if r.wantKeys(h) {
		if t, err = r.keys(ctx); err != nil {
			return nil, err
		}
	} else {
		rep.Keys = KeyComparison{Mode: ModeNone, Groups: []Group{}, Keys: []KeyDiff{}, Why: r.keysLeftOut(h)}
	}
	o.progress("comparing the members' leases and member lists")
	var leaseGroups, memberGroups [][]string
	rep.Leases, leaseGroups = r.compareLeases(ctx)
	rep.Membership, memberGroups = r.compareMembership(ctx)
	r.decide(h, t, leaseGroups, memberGroups)
	r.notes(h)
	return rep, nil
}

// wantKeys says whether the keys are compared one by one, as o.Keys
// asks: auto unless every member holds one hash of every write up to
// now (a full hash); mismatch unless the hashes agree (they differ, or
// could not be compared: a member started since the last compaction).
func (r *run) wantKeys(h hashFinding) bool {
	switch r.opts.Keys {
	case KeysAlways:
		return true
	case KeysNever:
		return false
	case KeysOnMismatch:
		return !h.agree()
	}
	return !(h.agree() && h.kind == HashFull)
}

// keysLeftOut says why the keys were not compared.
func (r *run) keysLeftOut(h hashFinding) string {
	switch {
	case r.opts.Keys == KeysNever:
		return "not asked for"
	case h.agree() && h.kind == HashFull:
		return fmt.Sprintf("every member's hash at revision %d is the same, which covers every key and every revision held", h.rev)
	case h.agree():
		return fmt.Sprintf("every member's hash of compaction %d is the same, and the keys are compared only when the hashes do not agree "+
			"(regghost members compares them)", h.rev)
	}
	return "not asked for"
}

// leftOut says which members were left out of the comparison, and why.
func leftOut(rep *Report) string {
	var parts []string
	for _, m := range rep.Members {
		switch {
		case m.Unreachable != "":
			parts = append(parts, m.Name+" does not answer")
		case m.Behind != nil:
			parts = append(parts, m.Name+" is behind")
		}
	}
	if len(parts) == 0 {
		return "no member was left out"
	}
	return strings.Join(parts, ", ")
}

// shared is the revision the keys are compared at: the last full hash
// sample's, else the lowest current revision of the members read now,
// unless it is below a member's compacted revision.
func (r *run) shared(ctx context.Context) Sample {
	if n := len(r.rep.Samples); n > 0 && r.rep.Samples[n-1].Kind == HashFull {
		return r.rep.Samples[n-1]
	}
	s := Sample{Kind: HashFull, Members: r.statuses(ctx)}
	r.compactions(ctx, s.Members)
	maxCompact, below, compacted := int64(0), "", ""
	for _, m := range s.Members {
		if m.Error != "" {
			continue
		}
		if s.Revision == 0 || m.Revision < s.Revision {
			s.Revision, below = m.Revision, m.Member
		}
		if m.CompactRevision > maxCompact {
			maxCompact, compacted = m.CompactRevision, m.Member
		}
	}
	if s.Revision < maxCompact {
		s.Why = fmt.Sprintf("%s's revision %d is below %s's compacted revision %d: no revision is held by every member "+
			"(its revisions diverged)", below, s.Revision, compacted, maxCompact)
		s.noShared = s.Why
	}
	return s
}

// keys compares the keys: at the last sample's revision, unless asked for
// the current values, or the members' revisions diverged (then a shared
// revision means other data on each member); and again with the current
// values when the comparison at the revision shows keys with one value at
// other revisions.
func (r *run) keys(ctx context.Context) (*tally, error) {
	last := r.shared(ctx)
	mode, why := ModeRevision, fmt.Sprintf("every member read at revision %d, the lowest current revision of the members", last.Revision)
	if diverged, because := revisionsDiverged(last); diverged {
		mode, why = ModeCurrent, "the members' revisions diverged ("+because+"): a shared revision holds other writes on each member, so the current values were compared"
	}
	switch {
	case r.opts.Current:
		mode, why = ModeCurrent, "the current values were asked for"
	case last.noShared != "":
		mode, why = ModeCurrent, last.noShared+", so the current values were compared"
	case last.Revision == 0:
		mode, why = ModeCurrent, "no shared revision was found ("+last.Why+"), so the current values were compared"
	}
	t, kc, err := r.compareKeys(ctx, mode, last.Revision)
	if err != nil {
		return nil, err
	}
	if mode == ModeRevision && t.revisionOnly > 0 {
		r.opts.progress("%s one value at other revisions: comparing the current values instead", plural.Verb(t.revisionOnly, "key", "holds", "hold"))
		why = fmt.Sprintf("at revision %d, %s held by every member with the same value but at other revisions: the members' revisions "+
			"diverged (etcd 3.5's consistent-index bug, etcd#13766), so the current values were compared instead", last.Revision, plural.Verb(t.revisionOnly, "key", "is", "are"))
		if t, kc, err = r.compareKeys(ctx, ModeCurrent, 0); err != nil {
			return nil, err
		}
	}
	kc.Why = why
	r.rep.Keys = kc
	return t, nil
}

func unreachable(ms []Member) string {
	var parts []string
	for _, m := range ms {
		if m.Unreachable != "" {
			parts = append(parts, m.Name+": "+m.Unreachable)
		}
	}
	if len(parts) == 0 {
		return "none unreachable"
	}
	return strings.Join(parts, "; ")
}

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
