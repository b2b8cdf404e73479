package members

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/regghost/regghost/pkg/etcdmembers"
	"github.com/regghost/regghost/pkg/etcdscan"
)

// ErrNotEtcd is returned (wrapped) when the endpoints are not etcd's
// members (kine): there is nothing to compare.
var ErrNotEtcd = errors.New("not etcd")

// listMembers reads the member list, each member's Status at the endpoint
// given that answers as it (else its client URL) and the alarms, through
// etcdmembers; alarms raised on member 0 (the whole cluster) are returned
// apart.
func listMembers(ctx context.Context, o *Options) ([]Member, []string, error) {
	list, alarms, notes := etcdmembers.Read(ctx, o.Client, o.timeout())
	for _, m := range list {
		if m.ID == "" {
			why := "it does not answer"
			if len(notes) > 0 {
				why = notes[0]
			}
			return nil, nil, fmt.Errorf("read etcd's member list: %s", why)
		}
	}
	if etcdmembers.NotEtcd(list) {
		return nil, nil, fmt.Errorf("%w: the endpoints answer as kine or another etcd API: there is one datastore and no members to compare", ErrNotEtcd)
	}
	out := make([]Member, len(list))
	for i, m := range list {
		out[i] = Member{Member: m}
		if out[i].Name == "" {
			out[i].Name = out[i].ID
		}
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

// statuses reads every compared member's Status into the report, and
// returns them as one sample's members (a Status is cheap: the members
// are read at once).
func (r *run) statuses(ctx context.Context) []MemberSample {
	ms := make([]MemberSample, len(r.conns))
	var wg sync.WaitGroup
	for i, c := range r.conns {
		ms[i].Member = r.rep.Members[c.m].Name
		wg.Go(func() { r.status(ctx, c, &ms[i]) })
	}
	wg.Wait()
	return ms
}

// sample hashes the members: at the newest revision they compacted at
// (HashCompaction) or at the lowest current revision (HashFull), each
// member in turn.
func (r *run) sample(ctx context.Context, kind string) Sample {
	if kind == HashCompaction {
		return r.compactionSample(ctx)
	}
	s := r.shared(ctx)
	answered := s.answered()
	switch {
	case len(answered) < 2:
		s.Why = "fewer than two members answered"
		return s
	case s.noShared != "":
		return s
	}
	r.opts.progress("hashing each member's keyspace at revision %d (HashKV), one member at a time", s.Revision)
	for _, i := range answered {
		r.hash(ctx, r.conns[i], s.Revision, &s.Members[i])
	}
	return r.group(s, answered)
}

// answered are the members of s whose status was read, by place.
func (s Sample) answered() []int {
	var out []int
	for i, m := range s.Members {
		if m.Error == "" {
			out = append(out, i)
		}
	}
	return out
}

// compactionSample asks each member in turn for its HashKV at the newest
// revision every member compacted at. etcd keeps the hash it computed
// while compacting (3.5.5 and later, the last ten compactions): it covers
// the revisions from the compaction before up to that one, and costs
// nothing to read. A member that kept none computes the hash at that
// revision instead, a scan of its keyspace covering another history: its
// hash is then not compared with a kept one (etcd's own compaction check
// skips such a peer too).
func (r *run) compactionSample(ctx context.Context) Sample {
	s := Sample{Kind: HashCompaction, Members: r.statuses(ctx)}
	r.compactions(ctx, s.Members)
	ms, answered := s.Members, s.answered()
	if len(answered) < 2 {
		s.Why = "fewer than two members answered"
		return s
	}
	compacts := map[int64][]string{}
	for _, i := range answered {
		compacts[ms[i].CompactRevision] = append(compacts[ms[i].CompactRevision], ms[i].Member)
		s.Revision = max(s.Revision, ms[i].CompactRevision)
	}
	switch {
	case s.Revision == 0:
		s.Why = "no member has compacted yet: etcd keeps a hash of each compaction only"
		return s
	case len(compacts) > 1:
		s.Why = "the members compacted at other revisions (" + revisionWords(compacts) + ")"
		return s
	}
	r.opts.progress("reading each member's hash of compaction %d (HashKV: kept from the compaction), one member at a time", s.Revision)
	for _, i := range answered {
		r.hash(ctx, r.conns[i], s.Revision, &ms[i])
		ms[i].Computed = ms[i].Hash != "" && ms[i].CompactRevision >= s.Revision
	}
	return r.group(s, answered)
}

// group groups the members by hash and says whether the hashes can be
// compared: every hash covers the same history (the same compacted
// revision below it).
func (r *run) group(s Sample, answered []int) Sample {
	ms := s.Members
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
		s.Why = "the members hashed from different compacted revisions (" + revisionWords(compacts) +
			"): their hashes cover different histories, and etcd's own check skips such a peer too"
		if s.Kind == HashCompaction {
			s.Why += " (a member that computed the hash holds no hash kept from the compaction: it started since)"
		}
	default:
		s.Comparable = true
	}
	return s
}

// revisionWords says which members are at which revision: "m0, m1 at 12;
// m2 at 40".
func revisionWords(byRev map[int64][]string) string {
	var parts []string
	for rev, who := range byRev {
		parts = append(parts, fmt.Sprintf("%s at %d", strings.Join(who, ", "), rev))
	}
	slices.Sort(parts)
	return strings.Join(parts, "; ")
}

// compactions reads the compacted revision of each member of ms that
// answered its Status (a few reads each, at once), into ms and the
// report; skip leaves members out.
func (r *run) compactions(ctx context.Context, ms []MemberSample, skip ...int) {
	var wg sync.WaitGroup
	for i, c := range r.conns {
		if ms[i].Error != "" || slices.Contains(skip, i) {
			continue
		}
		wg.Go(func() {
			sctx, cancel := context.WithTimeout(ctx, r.opts.timeout())
			defer cancel()
			compact, err := etcdscan.CompactedRevisionAt(sctx, c.cli, ms[i].Revision)
			if err != nil {
				ms[i].Error = "compacted revision: " + firstLine(err)
				return
			}
			ms[i].CompactRevision, r.rep.Members[c.m].CompactRevision = compact, compact
		})
	}
	wg.Wait()
}

// status reads c's Status into ms and the report.
func (r *run) status(ctx context.Context, c conn, ms *MemberSample) {
	sctx, cancel := context.WithTimeout(ctx, r.opts.timeout())
	defer cancel()
	st, err := c.cli.Status(sctx, c.ep)
	if err != nil {
		ms.Error = "Status: " + firstLine(err)
		return
	}
	m := &r.rep.Members[c.m]
	learner := m.Learner
	m.FromStatus((*pb.StatusResponse)(st))
	m.Learner = learner || st.IsLearner
	if st.Header != nil {
		ms.Revision = st.Header.Revision
		r.mu.Lock()
		if r.rep.ClusterID == "" && st.Header.ClusterId != 0 {
			r.rep.ClusterID = etcdmembers.HexID(st.Header.ClusterId)
		}
		r.mu.Unlock()
	}
	ms.AppliedIndex = st.RaftAppliedIndex
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
