package reclaim

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/regghost/regghost/internal/etcdtest"
)

// cluster is a 3-member embedded etcd (etcdtest.Cluster).
type cluster struct {
	names []string
	ids   []uint64
	eps   []string
	clis  []*clientv3.Client
	// cli reaches every member.
	cli *clientv3.Client
	ec  *etcdtest.Cluster
}

// startCluster runs three embedded etcd members m0, m1, m2 until the test
// ends. Elections are slow (5s), so that only the test moves leadership
// on a busy machine.
func startCluster(t *testing.T) *cluster {
	t.Helper()
	ec := etcdtest.StartCluster(t, 3, 5000)
	return &cluster{names: ec.Names, ids: ec.IDs, eps: ec.Endpoints, clis: ec.Clients, cli: ec.Client, ec: ec}
}

func (c *cluster) options(t *testing.T) Options {
	return Options{Client: c.cli, Config: clientv3.Config{Endpoints: c.eps, DialTimeout: 5 * time.Second, Logger: zap.NewNop()},
		BackupRoot: filepath.Join(t.TempDir(), "backups")}
}

// leader is the index of the member every member names as the leader.
func (c *cluster) leader(t *testing.T) int { return c.ec.Leader(t) }

// index is the index of the member named name.
func (c *cluster) index(t *testing.T, name string) int {
	t.Helper()
	for i, n := range c.names {
		if n == name {
			return i
		}
	}
	t.Fatalf("no member %s", name)
	return -1
}

// moveLeader hands leadership to member to and waits until every member
// names it.
func (c *cluster) moveLeader(t *testing.T, to int) {
	t.Helper()
	from := c.leader(t)
	if from == to {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.clis[from].MoveLeader(ctx, c.ids[to]); err != nil {
		t.Fatalf("move leadership from %s to %s: %v", c.names[from], c.names[to], err)
	}
	if got := c.leader(t); got != to {
		t.Fatalf("leader %s after the move, want %s", c.names[got], c.names[to])
	}
}

// TestRunLeaderLastAsLeadershipMoves: on three members, leadership moved
// during the compaction, or between two defragmentations, onto a member
// not defragmented yet makes that member the last; no member is
// defragmented while it leads and a follower is left.
func TestRunLeaderLastAsLeadershipMoves(t *testing.T) {
	t.Setenv("REGGHOST_LOCK_DIR", t.TempDir())
	c := startCluster(t)
	for i := 0; i < 4; i++ {
		if _, err := c.cli.Put(context.Background(), fmt.Sprintf("/big/%d", i), strings.Repeat("x", 256<<10)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		// when is the step, and after is how many members are done by
		// then, at which leadership moves onto the member the plan put
		// at position onto.
		when  string
		after int
		onto  int
		// want is the order, as positions in the plan.
		want []int
	}{
		{"onto the first follower during the compaction", StepCompacted, 0, 0, []int{1, 2, 0}},
		{"onto the second follower after the first defragmentation", StepDefragmented, 1, 1, []int{0, 2, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := c.cli.Put(context.Background(), "/big/again", strings.Repeat("y", 256<<10)); err != nil {
				t.Fatal(err)
			}
			o := c.options(t)
			var plan []string
			o.Progress = func(s Step) {
				if plan == nil {
					for _, m := range s.Result.Plan.Members {
						plan = append(plan, m.Name)
					}
				}
				switch {
				case s.Kind == tc.when && len(s.Result.Members) == tc.after:
					c.moveLeader(t, c.index(t, plan[tc.onto]))
				case s.Kind == StepDefragmenting:
					leader := c.names[c.leader(t)]
					if s.Member.Name == leader && len(s.Result.Members) < 2 {
						t.Errorf("%s was defragmented while it led and a follower was left", leader)
					}
				}
			}
			res, err := Run(context.Background(), o)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			var want, got []string
			for _, p := range tc.want {
				want = append(want, plan[p])
			}
			for i, m := range res.Members {
				got = append(got, m.Name)
				if m.Outcome != Defragmented || m.Leader != (i == len(res.Members)-1) {
					t.Errorf("member %d: %+v, want defragmented, the leader only last", i, m)
				}
			}
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("order %v, want %v (the plan: %v)", got, want, plan)
			}
		})
	}

	// TestLostLockStopsTheNextMember: etcd's lock lost during a
	// defragmentation stops the run before the next member.
	t.Run("the lock lost during a defragmentation", func(t *testing.T) {
		o := c.options(t)
		plan, err := Survey(context.Background(), o)
		if err != nil || len(plan.Refusals) > 0 {
			t.Fatalf("Survey: %v, %v", err, plan.Refusals)
		}
		res := &Result{Plan: plan, Members: []MemberResult{}, Compaction: &Compaction{Revision: plan.Revision}}
		lost := make(chan struct{})
		o.Progress = func(s Step) {
			if s.Kind == StepDefragmenting {
				select {
				case <-lost:
				default:
					close(lost)
				}
			}
		}
		err = defragmentAll(context.Background(), o, res, lost)
		first := plan.Members[0].Name
		if err == nil || !strings.Contains(err.Error(), "stopped at member "+plan.Members[1].Name+": regghost's etcd lock was lost") ||
			!strings.Contains(err.Error(), "defragmented: ["+first+"]") {
			t.Fatalf("defragmentAll: %v", err)
		}
		if s := res.Stop; s == nil || len(s.Done) != 1 || len(s.NotDone) != 2 || res.Members[0].Outcome != Defragmented || res.Members[1].Outcome != NotReached {
			t.Errorf("stop %+v, members %+v", res.Stop, res.Members)
		}
	})
}
