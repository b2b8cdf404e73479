package members

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/regghost/regghost/internal/etcdtest"
)

// TestASlowMemberIsNotWaitedOn: a member that answered the member list's
// Status and then answers nothing in the member timeout (a follower
// starved of CPU) is never waited on past the timeout, nor kept in the
// comparison, whose every later read would wait on it: settle leaves it
// out as not answering; leaveBehindAt (it fell behind after settle) names
// it behind, with why it is not read now, when the revision it last
// answered is below the shared one, else leaves it out as not answering.
// Each step runs on the three embedded members, with one member's client
// URL behind a proxy that stalls. (settle's judgement of a member that
// answered trailing and then stopped answering: TestSettled.)
func TestASlowMemberIsNotWaitedOn(t *testing.T) {
	c := startCluster(t, 3)
	ctx := context.Background()
	slow := c.follower(t)
	eps := slices.Clone(c.eps)
	o := c.options()
	o.Timeout = time.Second
	etcdtest.Put(t, c.cli, "/registry/configmaps/default/a", "a")

	for i, step := range []struct {
		name string
		// writes are made once the members were read (the others go on
		// applying while the slow member answers nothing).
		writes bool
		// atRevision runs leaveBehindAt at the others' current revision,
		// else settle runs.
		atRevision bool
		behind     bool
	}{
		{name: "it did not answer settle: not answering", writes: true, behind: false},
		{name: "it did not answer settle, nothing written: not answering", behind: false},
		{name: "it fell behind the shared revision: behind", writes: true, atRevision: true, behind: true},
		{name: "it held the shared revision: not answering", atRevision: true, behind: false},
	} {
		t.Run(step.name, func(t *testing.T) {
			// A proxy stalled holds its connections for good: one for each
			// step, and a client through it.
			p := etcdtest.NewStallProxy(t, c.eps[slow])
			eps[slow] = p.Addr
			cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cli.Close() })
			o.Client, o.Config.Endpoints = cli, eps
			appliedAlike(t, c)
			ms, _, err := listMembers(ctx, &o)
			if err != nil {
				t.Fatal(err)
			}
			r := &run{opts: &o, rep: &Report{Members: ms}}
			for m := range ms {
				mc, err := o.dial(ms[m].Endpoint)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { mc.Close() })
				r.conns = append(r.conns, conn{m: m, ep: ms[m].Endpoint, cli: mc})
			}
			name := c.names[slow]
			known := ms[slices.IndexFunc(ms, func(m Member) bool { return m.Name == name })].Revision
			if step.writes {
				etcdtest.Put(t, c.cli, "/registry/configmaps/default/b", fmt.Sprint(i))
			}
			p.Stall()
			// The slow member's reads wait this long without the timeout.
			sctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			if step.atRevision {
				rev := known
				if step.writes {
					rev = known + 1
				}
				r.leaveBehindAt(sctx, rev)
			} else {
				r.settle(sctx)
			}
			if sctx.Err() != nil {
				t.Fatalf("the comparison waited on the slow member until its context ended")
			}
			m := r.rep.Members[slices.IndexFunc(r.rep.Members, func(m Member) bool { return m.Name == name })]
			if slices.Contains(r.names(), name) {
				t.Fatalf("the slow member %s is still compared: behind %+v, unreachable %q", name, m.Behind, m.Unreachable)
			}
			if step.behind {
				if m.Behind == nil || m.Behind.Revisions != 1 || m.Behind.NoAnswer == "" || !slices.Equal(r.rep.Verdict.Behind, []string{name}) ||
					!strings.Contains(strings.Join(r.rep.Notes, "\n"), "as it last answered") {
					t.Errorf("%s: behind %+v, verdict %+v, notes %q", name, m.Behind, r.rep.Verdict, r.rep.Notes)
				}
				return
			}
			if m.Behind != nil || m.Unreachable == "" || !slices.Equal(r.rep.Verdict.NotCompared, []string{name}) {
				t.Errorf("%s: behind %+v, unreachable %q, verdict %+v", name, m.Behind, m.Unreachable, r.rep.Verdict)
			}
		})
	}
}

// appliedAlike waits until every member has applied what the leader has.
func appliedAlike(t *testing.T, c *cluster) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var applied []uint64
		for i, ep := range c.eps {
			st, err := c.Clients[i].Status(context.Background(), ep)
			if err != nil {
				t.Fatal(err)
			}
			applied = append(applied, st.RaftAppliedIndex)
		}
		if slices.Min(applied) == slices.Max(applied) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the members' applied indexes stay apart: %v", applied)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestSettled: settle's judgement of its samples, the first setting the
// mark: a member whose last answer trails it is late, judged on that
// answer when it answers no more (a follower starved of CPU); one that
// answers nothing, or caught up before it stopped answering, is silent
// (left out as not answering), never late; etcd before 3.4 (no applied
// index) makes none late.
func TestSettled(t *testing.T) {
	ok := func(applied uint64, rev int64) MemberSample {
		return MemberSample{AppliedIndex: applied, Revision: rev}
	}
	none := MemberSample{Error: "Status: context deadline exceeded"}
	for _, tt := range []struct {
		name         string
		samples      [][]MemberSample
		late, silent []int
		// lastOf is the applied index of each late member's last answer.
		lastOf []uint64
	}{
		{name: "all caught up", samples: [][]MemberSample{{ok(10, 5), ok(10, 5), ok(10, 5)}}},
		{name: "trails, then catches up", samples: [][]MemberSample{{ok(10, 5), ok(10, 5), ok(4, 2)}, {ok(12, 6), ok(12, 6), ok(10, 5)}}},
		{name: "trails to the end", samples: [][]MemberSample{{ok(10, 5), ok(10, 5), ok(4, 2)}, {ok(12, 6), ok(12, 6), ok(6, 3)}},
			late: []int{2}, lastOf: []uint64{6}},
		{name: "trails, then answers no more", samples: [][]MemberSample{{ok(10, 5), ok(10, 5), ok(4, 2)}, {ok(12, 6), ok(12, 6), none}},
			late: []int{2}, lastOf: []uint64{4}},
		{name: "trails, answers once more, then no more", samples: [][]MemberSample{{ok(10, 5), ok(10, 5), ok(4, 2)}, {ok(11, 5), ok(11, 5), ok(7, 3)}, {ok(12, 6), ok(12, 6), none}},
			late: []int{2}, lastOf: []uint64{7}},
		{name: "never answers", samples: [][]MemberSample{{ok(10, 5), ok(10, 5), none}}, silent: []int{2}},
		{name: "caught up, then answers no more", samples: [][]MemberSample{{ok(10, 5), ok(10, 5), ok(4, 2)}, {ok(12, 6), ok(12, 6), ok(10, 5)}, {ok(13, 7), ok(13, 7), none}},
			silent: []int{2}},
		{name: "etcd before 3.4", samples: [][]MemberSample{{ok(0, 5), ok(0, 5), ok(0, 2)}, {ok(0, 6), none, ok(0, 2)}}, silent: []int{1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			late, silent, last, at := settled(tt.samples)
			var lastOf []uint64
			for _, i := range late {
				lastOf = append(lastOf, last[i].AppliedIndex)
				if tt.samples[at[i]][i] != last[i] {
					t.Errorf("member %d's last answer %+v is not sample %d's", i, last[i], at[i])
				}
			}
			if !slices.Equal(late, tt.late) || !slices.Equal(silent, tt.silent) || !slices.Equal(lastOf, tt.lastOf) {
				t.Errorf("late %v (last applied %v), silent %v; want late %v (%v), silent %v", late, lastOf, silent, tt.late, tt.lastOf, tt.silent)
			}
		})
	}
}
