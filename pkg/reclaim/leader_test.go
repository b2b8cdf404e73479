package reclaim

import (
	"strings"
	"testing"
)

// TestPickAsLeadershipMoves runs pick the way defragmentAll does, with the
// members read again before each step and leadership moving between steps:
// the member that leads at a step is never picked while a follower is
// left, whichever member led when the run started.
func TestPickAsLeadershipMoves(t *testing.T) {
	for _, tc := range []struct {
		name string
		// leaders is who leads before each step ("" for nobody).
		leaders []string
		want    string
	}{
		{"leadership stays", []string{"m0", "m0", "m0"}, "m1,m2,m0"},
		{"it moves onto the first follower during the compaction", []string{"m1", "m1", "m1"}, "m0,m2,m1"},
		{"it moves onto a member not done after the first step", []string{"m0", "m2", "m2"}, "m1,m0,m2"},
		{"it moves onto the member just done: the old leader is a follower", []string{"m0", "m1", "m1"}, "m1,m0,m2"},
		{"it moves onto the member done first before the last step", []string{"m0", "m0", "m1"}, "m1,m2,m0"},
		{"it moves back and forth", []string{"m2", "m0", "m2"}, "m0,m1,m2"},
		{"an election before the last step", []string{"m0", "m0", ""}, "m1,m2,m0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done := map[string]bool{}
			var order []string
			for step, leader := range tc.leaders {
				members := three(leader)
				next := pick(members, done)
				if next == nil {
					t.Fatalf("step %d: nothing picked after %v", step, order)
				}
				if leads(members, next) && followerLeft(members, done, next) {
					t.Errorf("step %d: the leader %s was picked while a follower was left", step, next.Name)
				}
				done[next.ID] = true
				order = append(order, next.Name)
			}
			if got := strings.Join(order, ","); got != tc.want {
				t.Errorf("order %s, want %s", got, tc.want)
			}
			if next := pick(three(tc.leaders[len(tc.leaders)-1]), done); next != nil {
				t.Errorf("%s picked after every member was done", next.Name)
			}
		})
	}
}

// TestPickDuringAMove: while leadership moves, the member that says it
// leads and the one another member names as its leader both wait for the
// followers.
func TestPickDuringAMove(t *testing.T) {
	members := []Member{
		{Name: "m0", ID: "m0", id: 1, leaderID: 1, Leader: true},
		{Name: "m1", ID: "m1", id: 2, leaderID: 3},
		{Name: "m2", ID: "m2", id: 3, leaderID: 3},
		{Name: "m3", ID: "m3", id: 4, leaderID: 1},
	}
	done := map[string]bool{}
	var order []string
	for next := pick(members, done); next != nil; next = pick(members, done) {
		done[next.ID] = true
		order = append(order, next.Name)
	}
	if got := strings.Join(order, ","); got != "m1,m3,m0,m2" {
		t.Errorf("order %s, want the followers m1, m3 before m0 and m2", got)
	}
}

// three are members m0, m1, m2 as their Status reads them when leader
// leads: it says so, and the others name it.
func three(leader string) []Member {
	var out []Member
	for i, n := range []string{"m0", "m1", "m2"} {
		out = append(out, Member{Name: n, ID: n, id: uint64(i + 1), Leader: n == leader})
	}
	for i := range out {
		for _, l := range out {
			if l.Leader {
				out[i].leaderID = l.id
			}
		}
	}
	return out
}

// followerLeft says whether a voting member other than m, not done, follows.
func followerLeft(members []Member, done map[string]bool, m *Member) bool {
	for i := range members {
		o := &members[i]
		if o.ID != m.ID && !o.Learner && !done[o.ID] && !leads(members, o) {
			return true
		}
	}
	return false
}
