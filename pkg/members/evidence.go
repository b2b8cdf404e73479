package members

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/space"
)

// listMembers reads the member list, each member's Status at the endpoint
// given that answers as it (else its client URL) and the alarms, through
// pkg/space's reader; alarms raised on member 0 (the whole cluster) are
// returned apart.
// ErrNotEtcd is returned (wrapped) when the endpoints are not etcd's
// members (kine): there is nothing to compare.
var ErrNotEtcd = errors.New("not etcd")

func listMembers(ctx context.Context, o *Options) ([]Member, []string, error) {
	list, alarms, notes := space.Members(ctx, o.Client, space.MemberOptions{Timeout: o.timeout()})
	for _, m := range list {
		if m.ID == "" {
			why := "it does not answer"
			if len(notes) > 0 {
				why = notes[0]
			}
			return nil, nil, fmt.Errorf("read etcd's member list: %s", why)
		}
	}
	if space.NotEtcd(list) {
		return nil, nil, fmt.Errorf("%w: the endpoints answer as kine or another etcd API: there is one datastore and no members to compare", ErrNotEtcd)
	}
	out := make([]Member, len(list))
	for i, m := range list {
		out[i] = Member{Name: m.Name, ID: m.ID, Endpoint: m.Endpoint, Version: m.Version, Leader: m.Leader, Learner: m.Learner,
			DBSize: m.DBSize, DBSizeInUse: m.DBSizeInUse, Errors: m.Errors, Unreachable: m.Unreachable}
		if out[i].Endpoint == "" && out[i].Unreachable == "" {
			out[i].Unreachable = "no endpoint answers as it"
		}
	}
	var cluster []string
	for _, a := range alarms {
		i := slices.IndexFunc(out, func(m Member) bool { return m.ID == a.ID })
		if i < 0 {
			cluster = append(cluster, a.Alarm)
			continue
		}
		out[i].Alarms = append(out[i].Alarms, a.Alarm)
	}
	return out, cluster, nil
}

// sample reads every member's Status, picks the lowest current revision
// (every member holds it), and reads each member's HashKV at it. The
// hashes are comparable when that revision is not below a member's
// compacted revision and every hash covers the same history (the same
// compacted revision: etcd's own check skips a peer otherwise).
func (r *run) sample(ctx context.Context) Sample {
	ms := make([]MemberSample, len(r.conns))
	var wg sync.WaitGroup
	for i, c := range r.conns {
		ms[i].Member = r.rep.Members[c.m].Name
		wg.Go(func() { r.status(ctx, c, &ms[i]) })
	}
	wg.Wait()
	s := Sample{Members: ms}
	var answered []int
	maxCompact, below := int64(0), ""
	for i := range ms {
		if ms[i].Error != "" {
			continue
		}
		answered = append(answered, i)
		if s.Revision == 0 || ms[i].Revision < s.Revision {
			s.Revision, below = ms[i].Revision, ms[i].Member
		}
	}
	compacted := ""
	for _, i := range answered {
		if ms[i].CompactRevision > maxCompact {
			maxCompact, compacted = ms[i].CompactRevision, ms[i].Member
		}
	}
	switch {
	case len(answered) < 2:
		s.Why = "fewer than two members answered"
		return s
	case s.Revision < maxCompact:
		s.Why = fmt.Sprintf("%s's revision %d is below %s's compacted revision %d: no revision is held by every member "+
			"(its revisions diverged, or it is far behind)", below, s.Revision, compacted, maxCompact)
		s.noShared = s.Why
		return s
	}
	r.opts.progress("hashing every member's keyspace at revision %d (HashKV)", s.Revision)
	for _, i := range answered {
		wg.Go(func() { r.hash(ctx, r.conns[i], s.Revision, &ms[i]) })
	}
	wg.Wait()
	labels := map[string]string{}
	var order []string
	compacts := map[int64][]string{}
	for _, i := range answered {
		if ms[i].Hash == "" {
			continue
		}
		labels[ms[i].Member] = ms[i].Hash
		order = append(order, ms[i].Member)
		compacts[ms[i].CompactRevision] = append(compacts[ms[i].CompactRevision], ms[i].Member)
	}
	s.Groups = partition(order, labels)
	switch {
	case len(order) < 2:
		s.Why = "fewer than two members answered HashKV"
	case len(compacts) > 1:
		var parts []string
		for rev, who := range compacts {
			parts = append(parts, fmt.Sprintf("%s at %d", strings.Join(who, ", "), rev))
		}
		slices.Sort(parts)
		s.Why = "the members hashed from different compacted revisions (" + strings.Join(parts, "; ") +
			"): their hashes cover different histories, and etcd's own check skips such a peer too"
	default:
		s.Comparable = true
	}
	return s
}

// status reads c's Status and compacted revision into ms and the report.
func (r *run) status(ctx context.Context, c conn, ms *MemberSample) {
	sctx, cancel := context.WithTimeout(ctx, r.opts.timeout())
	defer cancel()
	st, err := c.cli.Status(sctx, c.ep)
	if err != nil {
		ms.Error = "Status: " + firstLine(err)
		return
	}
	m := &r.rep.Members[c.m]
	if st.Header != nil {
		ms.Revision = st.Header.Revision
		m.Revision, m.RaftTerm = st.Header.Revision, st.RaftTerm
		m.Leader = st.Leader != 0 && st.Leader == st.Header.MemberId
		r.mu.Lock()
		if r.rep.ClusterID == "" && st.Header.ClusterId != 0 {
			r.rep.ClusterID = fmt.Sprintf("%x", st.Header.ClusterId)
		}
		r.mu.Unlock()
	}
	ms.AppliedIndex = st.RaftAppliedIndex
	m.AppliedIndex, m.RaftIndex = st.RaftAppliedIndex, st.RaftIndex
	m.DBSize, m.DBSizeInUse, m.Errors, m.Version = st.DbSize, st.DbSizeInUse, st.Errors, st.Version
	m.Learner = m.Learner || st.IsLearner
	compact, err := etcdscan.CompactedRevisionAt(sctx, c.cli, ms.Revision)
	if err != nil {
		ms.Error = "compacted revision: " + firstLine(err)
		return
	}
	ms.CompactRevision, m.CompactRevision = compact, compact
}

// hash reads c's HashKV at rev into ms.
func (r *run) hash(ctx context.Context, c conn, rev int64, ms *MemberSample) {
	resp, err := c.cli.HashKV(ctx, c.ep, rev)
	if err != nil {
		ms.Error = fmt.Sprintf("HashKV at %d: %s", rev, firstLine(err))
		return
	}
	ms.Hash = fmt.Sprintf("%08x", resp.Hash)
	ms.CompactRevision = resp.CompactRevision
}

// revisionsDiverged reports whether two members' revisions are further
// apart than their applied indexes allow: every raft entry applied makes
// at most one revision, so a member that applied as many entries as
// another but holds a revision far behind (or ahead) numbered its
// revisions differently (etcd 3.5's consistent-index bug: etcd#13766).
func revisionsDiverged(s Sample) (bool, string) {
	var ok []MemberSample
	for _, m := range s.Members {
		if m.Error == "" {
			if m.AppliedIndex == 0 {
				return false, "" // etcd before 3.4 says no applied index
			}
			ok = append(ok, m)
		}
	}
	slices.SortFunc(ok, func(a, b MemberSample) int { return cmp.Compare(a.AppliedIndex, b.AppliedIndex) })
	for i := range ok {
		for j := i + 1; j < len(ok); j++ {
			lo, hi := ok[i], ok[j]
			gap := hi.Revision - lo.Revision
			allowed := int64(hi.AppliedIndex - lo.AppliedIndex)
			if gap < -DivergenceSlack || gap > allowed+DivergenceSlack {
				return true, fmt.Sprintf("%s is at revision %d after applying raft index %d, %s at revision %d after %d: "+
					"their revisions are %d apart, more than the %d entries between them can make",
					lo.Member, lo.Revision, lo.AppliedIndex, hi.Member, hi.Revision, hi.AppliedIndex, abs(gap), allowed)
			}
		}
	}
	return false, ""
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}
