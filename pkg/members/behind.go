package members

import (
	"context"
	"fmt"
	"github.com/regghost/regghost/pkg/plural"
	"slices"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// settle finds the members that are behind, and leaves them out of the
// comparison: a member that has not applied what the others had applied
// when they were first read, once it was given the interval to catch up.
// A member behind is not wrong: it is a follower that was paused, slow or
// restarted, and holds what the others held some revisions ago; compared,
// every key written since would differ. How far it trails is said (raft
// entries, revisions, and whether its revision is below another member's
// compaction), and it is never named wrong. A member whose applied index
// caught up but whose revision is far behind numbered its revisions
// otherwise (revisionsDiverged): that is not behind, and is compared.
func (r *run) settle(ctx context.Context) {
	first := r.statuses(ctx)
	var mark uint64
	for _, s := range first {
		if s.Error == "" {
			mark = max(mark, s.AppliedIndex)
		}
	}
	if mark == 0 {
		return // etcd before 3.4 says no applied index
	}
	lagging := func(ms []MemberSample) []int {
		var out []int
		for i, s := range ms {
			if s.Error == "" && s.AppliedIndex < mark {
				out = append(out, i)
			}
		}
		return out
	}
	if len(lagging(first)) == 0 {
		return
	}
	start := time.Now()
	wait := r.opts.interval()
	r.opts.progress("a member has not applied what the others had; giving it %s to catch up", wait)
	now := first
	for len(lagging(now)) > 0 && time.Since(start) < wait {
		if err := sleep(ctx, min(200*time.Millisecond, wait)); err != nil {
			return
		}
		now = r.statuses(ctx)
	}
	late := lagging(now)
	if len(late) == 0 {
		return
	}
	r.compactions(ctx, now, late...)
	var top uint64
	var topRev, maxCompact int64
	for i, s := range now {
		if s.Error == "" && !slices.Contains(late, i) {
			top, topRev, maxCompact = max(top, s.AppliedIndex), max(topRev, s.Revision), max(maxCompact, s.CompactRevision)
		}
	}
	keep := r.conns[:0]
	for i, c := range r.conns {
		if !slices.Contains(late, i) {
			keep = append(keep, c)
			continue
		}
		s := now[i]
		m := &r.rep.Members[c.m]
		m.Behind = &Lag{Entries: top - s.AppliedIndex, Revisions: topRev - s.Revision, BelowCompaction: s.Revision < maxCompact,
			Waited: time.Since(start).Round(time.Millisecond).Seconds()}
		r.rep.Verdict.Behind = append(r.rep.Verdict.Behind, m.Name)
		r.rep.Notes = append(r.rep.Notes, behindNote(m.Name, m.Behind))
		c.cli.Close()
	}
	r.conns = keep
}

// behindNote says how far a member trails, and what it means.
func behindNote(name string, l *Lag) string {
	s := fmt.Sprintf("%s is behind: %s and %s behind the member furthest along, %gs after it was first read", name, plural.Of(int(l.Entries), "raft entry"), plural.Of(int(l.Revisions), "revision"), l.Waited)
	if l.BelowCompaction {
		s += "; its revision is below another member's compaction, so no revision is held by every member"
	}
	return s + ": it was not compared and is not named wrong (a member that is behind holds what the others held a while ago); " +
		"compare again once it has caught up (`etcdctl endpoint status` shows its raft applied index)"
}

// leaveBehindAt leaves out of the comparison, as behind, each member whose
// current revision has not reached rev (given the interval to reach it):
// it fell behind after settle, or its status was not read when the shared
// revision was chosen.
func (r *run) leaveBehindAt(ctx context.Context, rev int64) {
	start := time.Now()
	current := func(c conn) (int64, error) {
		resp, err := c.cli.Get(ctx, "\x00", clientv3.WithCountOnly(), clientv3.WithSerializable())
		if err != nil {
			return 0, err
		}
		return resp.Header.Revision, nil
	}
	var keep, late []conn
	lag := map[int]int64{}
	for _, c := range r.conns {
		cur, err := current(c)
		for err == nil && cur < rev && time.Since(start) < r.opts.interval() {
			if sleep(ctx, 200*time.Millisecond) != nil {
				break
			}
			cur, err = current(c)
		}
		if err != nil || cur >= rev {
			keep = append(keep, c)
			continue
		}
		late, lag[c.m] = append(late, c), rev-cur
	}
	// The raft entries it trails by, as the members kept have applied them
	// (what serve exports and alerts on).
	applied := func(c conn) uint64 {
		st, err := c.cli.Status(ctx, c.ep)
		if err != nil {
			return 0
		}
		return st.RaftAppliedIndex
	}
	var top uint64
	if len(late) > 0 {
		for _, c := range keep {
			top = max(top, applied(c))
		}
	}
	for _, c := range late {
		m := &r.rep.Members[c.m]
		m.Behind = &Lag{Revisions: lag[c.m], Waited: time.Since(start).Round(time.Millisecond).Seconds()}
		if a := applied(c); top > a {
			m.Behind.Entries = top - a
		}
		r.rep.Verdict.Behind = append(r.rep.Verdict.Behind, m.Name)
		r.rep.Notes = append(r.rep.Notes, behindNote(m.Name, m.Behind))
		c.cli.Close()
	}
	r.conns = keep
}
