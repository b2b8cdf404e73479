package members

import (
	"context"
	"fmt"
	"slices"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/pkg/plural"
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
//
// A member that stops answering its Status in the member timeout (one
// starved of CPU answers too slowly) is judged on the last Status it
// answered here: behind, by how far it trailed the others in that same
// read, when that answer trailed; else, once asked again and silent
// twice in a row (one miss is no reason), left out as not answering. It
// is not waited on further: one slow member never holds the comparison.
func (r *run) settle(ctx context.Context) {
	samples := [][]MemberSample{r.statuses(ctx)}
	start := time.Now()
	if late, _, _, _ := settled(samples); len(late) > 0 {
		wait := r.opts.interval()
		r.opts.progress("a member has not applied what the others had; giving it %s to catch up", wait)
		for time.Since(start) < wait {
			if err := sleep(ctx, min(200*time.Millisecond, wait)); err != nil {
				return
			}
			samples = append(samples, r.statuses(ctx))
			if late, _, _, _ = settled(samples); len(late) == 0 {
				break
			}
		}
	}
	if _, silent, _, _ := settled(samples); len(silent) > 0 {
		samples = append(samples, r.statuses(ctx))
	}
	late, silent, last, at := settled(samples)
	if len(late) == 0 && len(silent) == 0 {
		return
	}
	now := samples[len(samples)-1]
	out := append(slices.Clone(late), silent...)
	r.compactions(ctx, now, out...)
	var maxCompact int64
	for i, s := range now {
		if s.Error == "" && !slices.Contains(out, i) {
			maxCompact = max(maxCompact, s.CompactRevision)
		}
	}
	keep := r.conns[:0]
	for i, c := range r.conns {
		m := &r.rep.Members[c.m]
		switch {
		case slices.Contains(late, i):
			// How far it trailed the others in the read it last answered.
			var top uint64
			var topRev int64
			for j, o := range samples[at[i]] {
				if o.Error == "" && !slices.Contains(out, j) {
					top, topRev = max(top, o.AppliedIndex), max(topRev, o.Revision)
				}
			}
			s := last[i]
			m.Behind = &Lag{Revisions: max(topRev-s.Revision, 0), BelowCompaction: s.Revision < maxCompact,
				Waited: time.Since(start).Round(time.Millisecond).Seconds(), NoAnswer: now[i].Error}
			if top > s.AppliedIndex {
				m.Behind.Entries = top - s.AppliedIndex
			}
			r.behind(m)
		case slices.Contains(silent, i):
			r.notAnswering(m, fmt.Sprintf("it answered the member list, then not its Status twice in a row within %s (%s): it is slow (CPU, disk) or cut off",
				r.opts.timeout(), now[i].Error))
		default:
			keep = append(keep, c)
			continue
		}
		c.cli.Close()
	}
	r.conns = keep
}

// settled judges settle's samples, taken in turn of the same members: the
// first sets the mark, the highest applied index of the members that
// answered it. late are the members whose last answer (last, in sample
// at) trails the mark; silent those that did not answer the last sample
// and are not late. etcd before 3.4 says no applied index: none is late
// then.
func settled(samples [][]MemberSample) (late, silent []int, last []MemberSample, at []int) {
	var mark uint64
	for _, s := range samples[0] {
		if s.Error == "" {
			mark = max(mark, s.AppliedIndex)
		}
	}
	now := samples[len(samples)-1]
	last, at = make([]MemberSample, len(now)), make([]int, len(now))
	answered := make([]bool, len(now))
	for k, sample := range samples {
		for i, s := range sample {
			if s.Error == "" {
				last[i], at[i], answered[i] = s, k, true
			}
		}
	}
	for i := range now {
		switch {
		case answered[i] && last[i].AppliedIndex < mark:
			late = append(late, i)
		case now[i].Error != "":
			silent = append(silent, i)
		}
	}
	return late, silent, last, at
}

// behindNote says how far a member trails, and what it means.
func behindNote(name string, l *Lag) string {
	s := fmt.Sprintf("%s is behind: %s and %s behind the member furthest along, %gs after it was first read", name, plural.Of(int(l.Entries), "raft entry"), plural.Of(int(l.Revisions), "revision"), l.Waited)
	if l.NoAnswer != "" {
		s += fmt.Sprintf(" (as it last answered; it has not answered since: %s)", l.NoAnswer)
	}
	if l.BelowCompaction {
		s += "; its revision is below another member's compaction, so no revision is held by every member"
	}
	return s + ": it was not compared and is not named wrong (a member that is behind holds what the others held a while ago); " +
		"compare again once it has caught up (`etcdctl endpoint status` shows its raft applied index)"
}

// leaveBehindAt leaves out of the comparison, as behind, each member whose
// current revision has not reached rev (given the interval to reach it):
// it fell behind after settle, or its status was not read when the shared
// revision was chosen. Each read is bounded by the member timeout: a
// member that does not answer in it is behind when the revision it last
// answered is below rev, else left out as not answering.
func (r *run) leaveBehindAt(ctx context.Context, rev int64) {
	start := time.Now()
	current := func(c conn) (int64, error) {
		gctx, cancel := context.WithTimeout(ctx, r.opts.timeout())
		defer cancel()
		resp, err := c.cli.Get(gctx, "\x00", clientv3.WithCountOnly(), clientv3.WithSerializable())
		if err != nil {
			return 0, err
		}
		return resp.Header.Revision, nil
	}
	var keep, late, silent []conn
	lag := map[int]int64{}
	why := map[int]string{}
	for _, c := range r.conns {
		known := r.rep.Members[c.m].Revision
		cur, err := current(c)
		for err == nil && cur < rev && time.Since(start) < r.opts.interval() {
			if sleep(ctx, 200*time.Millisecond) != nil {
				break
			}
			cur, err = current(c)
		}
		switch {
		case err != nil && ctx.Err() != nil:
			keep = append(keep, c) // the comparison ends: its reads say so
		case err != nil && known >= rev:
			silent, why[c.m] = append(silent, c), firstLine(err)
		case err != nil:
			late, lag[c.m], why[c.m] = append(late, c), rev-known, firstLine(err)
		case cur >= rev:
			keep = append(keep, c)
		default:
			late, lag[c.m] = append(late, c), rev-cur
		}
	}
	// The raft entries it trails by, as the members kept have applied them
	// (what serve exports and alerts on); a member that does not answer
	// counts as it last answered.
	applied := func(c conn) (uint64, error) {
		sctx, cancel := context.WithTimeout(ctx, r.opts.timeout())
		defer cancel()
		st, err := c.cli.Status(sctx, c.ep)
		if err != nil {
			return r.rep.Members[c.m].AppliedIndex, err
		}
		return st.RaftAppliedIndex, nil
	}
	var top uint64
	if len(late) > 0 {
		for _, c := range keep {
			a, _ := applied(c)
			top = max(top, a)
		}
	}
	for _, c := range late {
		m := &r.rep.Members[c.m]
		m.Behind = &Lag{Revisions: lag[c.m], Waited: time.Since(start).Round(time.Millisecond).Seconds()}
		a := m.AppliedIndex
		if why[c.m] != "" {
			m.Behind.NoAnswer = "read of its revision: " + why[c.m]
		} else {
			var err error
			if a, err = applied(c); err != nil {
				m.Behind.NoAnswer = "Status: " + firstLine(err)
			}
		}
		if top > a {
			m.Behind.Entries = top - a
		}
		r.behind(m)
		c.cli.Close()
	}
	for _, c := range silent {
		r.notAnswering(&r.rep.Members[c.m], fmt.Sprintf("it answered its Status, then not a read of its revision within %s (%s): it is slow (CPU, disk) or cut off",
			r.opts.timeout(), why[c.m]))
		c.cli.Close()
	}
	r.conns = keep
}

// behind records m, whose Behind is set, as left out behind: in the
// verdict, with a note saying how far it trails.
func (r *run) behind(m *Member) {
	r.rep.Verdict.Behind = append(r.rep.Verdict.Behind, m.Name)
	r.rep.Notes = append(r.rep.Notes, behindNote(m.Name, m.Behind))
}

// notAnswering records m as left out because it does not answer, and why.
func (r *run) notAnswering(m *Member, why string) {
	m.Unreachable = why
	r.rep.Verdict.NotCompared = append(r.rep.Verdict.NotCompared, m.Name)
}
