package members

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/etcdmembers"
	"github.com/regghost/regghost/pkg/etcdwrite"
)

// TestReplaceAWrongMember: one member's data is changed while it is
// stopped (a key dropped, a value changed, a key added); Replace names it,
// saves every member's snapshot, removes it and adds it back as a learner,
// and stops there until the member's node starts it again on an empty
// data directory; the next run promotes it once it has caught up, and the
// members then agree key by key and by hash. The wrong member leading
// moves the leadership first; two members wrong of three is refused.
func TestReplaceAWrongMember(t *testing.T) {
	for _, tt := range []struct {
		name       string
		wrongLeads bool
	}{{"a follower", false}, {"the leader", true}} {
		t.Run(tt.name, func(t *testing.T) {
			c := startCluster(t, 3)
			ctx := context.Background()
			for i := 0; i < 20; i++ {
				etcdtest.Put(t, c.cli, fmt.Sprintf("/registry/configmaps/default/cm-%d", i), configMap(t, fmt.Sprintf("cm-%d", i), "v1"))
			}
			cm := func(i int) string { return fmt.Sprintf("/registry/configmaps/default/cm-%d", i) }
			w := c.follower(t)
			c.edit(t, w, dropKey(cm(3)), setValue(cm(5), "corrupt"), addKey("/registry/configmaps/default/ghost", configMap(t, "ghost", "x")))
			if tt.wrongLeads {
				lead := c.leader(t)
				if _, err := c.Clients[lead].MoveLeader(ctx, c.IDs[w]); err != nil {
					t.Fatal(err)
				}
				if got := c.leader(t); got != w {
					t.Fatalf("%s leads, want %s", c.names[got], c.names[w])
				}
			}
			root := t.TempDir()
			o := ReplaceOptions{Compare: c.options(), Member: c.names[w], EvidenceRoot: root, Poll: 200 * time.Millisecond}
			o.Compare.Keys = KeysAlways

			// The dry run changes nothing.
			plan, err := Replace(ctx, o)
			if err != nil || plan.Stage != StagePlanned || !strings.Contains(strings.Join(plan.Steps, "\n"), "remove "+c.names[w]) {
				t.Fatalf("dry run: %+v, %v", plan, err)
			}
			if tt.wrongLeads != strings.Contains(strings.Join(plan.Steps, "\n"), "leadership: move it from "+c.names[w]) {
				t.Errorf("the plan moves the leadership: %v, want %v:\n%s", !tt.wrongLeads, tt.wrongLeads, strings.Join(plan.Steps, "\n"))
			}
			if entries, _ := os.ReadDir(root); len(entries) != 0 {
				t.Fatalf("the dry run wrote %v", entries)
			}

			t.Setenv(etcdwrite.LockDirEnv, t.TempDir())
			if !tt.wrongLeads {
				// Another regghost writing on this node: refused before
				// anything is judged or written.
				ml, err := c.cli.MemberList(ctx)
				if err != nil {
					t.Fatal(err)
				}
				unlock, _, err := etcdwrite.NodeLock(fmt.Sprintf("%x", ml.Header.ClusterId), "another regghost")
				if err != nil {
					t.Fatal(err)
				}
				o.Confirm = true
				if _, err := Replace(ctx, o); !errors.Is(err, etcdwrite.ErrLocked) || !strings.Contains(err.Error(), "nothing was changed") {
					t.Errorf("Replace while this node's lock is held: %v, want refused", err)
				}
				unlock()
				if entries, _ := os.ReadDir(root); len(entries) != 0 {
					t.Fatalf("a refused replacement wrote %v", entries)
				}
				o.Confirm = false
				// A learner already there (a member joining): etcd takes
				// one, so the member removed could not be added back.
				var other *clientv3.MemberAddResponse
				err = reconfigure(ctx, o.Compare, "add a learner", func(ctx context.Context) (err error) {
					other, err = c.cli.MemberAddAsLearner(ctx, []string{"http://127.0.0.1:1"})
					return err
				})
				if err != nil {
					t.Fatal(err)
				}
				o.Confirm = true
				if _, err := Replace(ctx, o); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "one learner at a time") {
					t.Errorf("Replace beside a learner: %v, want refused", err)
				}
				if _, err := c.cli.MemberRemove(ctx, other.Member.ID); err != nil {
					t.Fatal(err)
				}
				if entries, _ := os.ReadDir(root); len(entries) != 0 {
					t.Fatalf("a refused replacement wrote %v", entries)
				}
				o.Confirm = false
			}

			// Confirmed: evidence, removal, the learner added; it waits.
			o.Confirm = true
			res, err := Replace(ctx, o)
			if !errors.Is(err, ErrLearnerWaiting) || res.Stage != StageWaiting {
				t.Fatalf("Replace: %v (%+v), want it waiting for the learner", err, res)
			}
			if len(res.Evidence) != 3 {
				t.Errorf("evidence: %+v, want every member's snapshot", res.Evidence)
			}
			for _, e := range res.Evidence {
				if st, err := os.Stat(e.Path); err != nil || st.Size() != e.Size {
					t.Errorf("evidence %s: %v", e.Path, err)
				}
			}
			if tt.wrongLeads && (res.MovedLeaderTo == "" || res.MovedLeaderTo == c.names[w] || res.MovedLeaderFrom != c.names[w]) {
				t.Errorf("moved the leadership from %q to %q", res.MovedLeaderFrom, res.MovedLeaderTo)
			}
			onNode := strings.Join(res.OnNode, "\n")
			initial := onNode[strings.Index(onNode, "--initial-cluster=")+len("--initial-cluster="):]
			initial = initial[:strings.IndexAny(initial, " \n")]
			if !strings.Contains(onNode, "--initial-cluster-state=existing") || !strings.Contains(initial, c.names[w]+"="+c.PeerURL(w)) {
				t.Fatalf("what to run on the node: %s", onNode)
			}

			// The node: its data directory moved aside (kept), etcd
			// started again empty, joining as it is told.
			c.Stop(w)
			aside := c.dirs[w] + ".wrong"
			if err := os.Rename(c.dirs[w], aside); err != nil {
				t.Fatal(err)
			}
			c.Rejoin(t, w, initial)
			c.Ready(t, w)

			// A dry run, now that the learner runs and has caught up,
			// still changes nothing: it neither promotes nor disarms.
			o.Confirm = false
			plan, err = Replace(ctx, o)
			if err != nil || plan.Stage != StagePlanned {
				t.Fatalf("dry run of the replacement taken up: %v (%+v)", err, plan)
			}
			list, err := c.cli.MemberList(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range list.Members {
				if m.Name == c.names[w] && !m.IsLearner {
					t.Fatalf("the dry run promoted %s", m.Name)
				}
			}
			if tt.wrongLeads {
				// The promotion happened, and its answer was lost (or
				// someone promoted it by hand): the next run compares and
				// ends the replacement all the same.
				id, _ := strconv.ParseUint(res.LearnerID, 16, 64)
				err := reconfigure(ctx, o.Compare, "promote", func(ctx context.Context) error {
					_, err := c.cli.MemberPromote(ctx, id)
					if err != nil && notReady(err) {
						time.Sleep(500 * time.Millisecond)
						return rpctypes.ErrTimeout
					}
					return err
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			o.Confirm = true
			o.Wait = 2 * time.Minute
			res, err = Replace(ctx, o)
			if err != nil || res.Stage != StageReplaced {
				t.Fatalf("Replace once the learner runs: %v (%+v)", err, res)
			}
			if res.After == nil || !res.After.Verdict.Agree || res.After.Keys.Differ != 0 {
				t.Errorf("after: %+v", res.After)
			}
			if _, err := os.Stat(filepath.Join(aside, "member", "snap", "db")); err != nil {
				t.Errorf("the wrong member's data is gone: %v", err)
			}
			// Replaced, the record is never taken up again.
			if _, err := Replace(ctx, o); !errors.Is(err, ErrRefused) {
				t.Errorf("Replace of a member that agrees: %v, want refused", err)
			}
		})
	}
}

// TestReplaceRefusesWithoutAQuorum: two members of three changed two
// ways: no quorum shares one copy, so no member may be replaced (the new
// one would copy data nobody can vouch for), and nothing is changed.
func TestReplaceRefusesWithoutAQuorum(t *testing.T) {
	c := startCluster(t, 3)
	ctx := context.Background()
	for i := 0; i < 10; i++ {
		etcdtest.Put(t, c.cli, fmt.Sprintf("/registry/configmaps/default/cm-%d", i), configMap(t, fmt.Sprintf("cm-%d", i), "v1"))
	}
	a := c.follower(t)
	b := c.follower(t, a)
	c.edit(t, a, dropKey("/registry/configmaps/default/cm-3"))
	c.edit(t, b, setValue("/registry/configmaps/default/cm-5", "corrupt"))
	before, err := c.cli.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	for _, who := range []int{a, b, c.leader(t)} {
		o := ReplaceOptions{Compare: c.options(), Member: c.names[who], EvidenceRoot: root, Confirm: true}
		_, err := Replace(ctx, o)
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "nothing was changed") {
			t.Errorf("Replace %s: %v, want refused", c.names[who], err)
		}
	}
	after, err := c.cli.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Members) != len(before.Members) {
		t.Errorf("the member list changed: %v", after.Members)
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Errorf("a refused replacement wrote %v", entries)
	}
}

var _ = bbolt.Options{}

// TestLatestRecord: only the newest record of the member in this cluster
// is taken up, and only while its replacement is under way; another
// cluster's, a newer one that ended, or another member's damaged record
// never make one be taken up.
func TestLatestRecord(t *testing.T) {
	write := func(root, dir, body string) {
		t.Helper()
		p := filepath.Join(root, dir)
		if err := os.MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, recordFile), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	rec := func(stage, cluster string) string {
		return fmt.Sprintf(`{"stage":%q,"cluster":%q,"member":"m1","id":"a1","peerURLs":["http://10.0.0.1:2380"]}`, stage, cluster)
	}
	for _, tt := range []struct {
		name    string
		records map[string]string
		want    bool
	}{
		{"one under way", map[string]string{"20260101T000000Z-members-replace-m1": rec("removing", "c1")}, true},
		{"another cluster's", map[string]string{"20260101T000000Z-members-replace-m1": rec("removing", "c2")}, false},
		{"a newer one replaced", map[string]string{"20260101T000000Z-members-replace-m1": rec("removing", "c1"), "20260201T000000Z-members-replace-m1": rec("replaced", "c1")}, false},
		{"a newer one abandoned", map[string]string{"20260101T000000Z-members-replace-m1": rec("removing", "c1"), "20260201T000000Z-members-replace-m1": rec("abandoned", "c1")}, false},
		{"another member's damaged record", map[string]string{"20260101T000000Z-members-replace-m1": rec("removing", "c1"), "20260201T000000Z-members-replace-m2": "{"}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			for dir, body := range tt.records {
				write(root, dir, body)
			}
			r, _, err := latestRecord(root, "m1", "c1")
			if err != nil || (r != nil) != tt.want {
				t.Errorf("latestRecord: %+v, %v; want a record: %v", r, err, tt.want)
			}
		})
	}
}

// TestReplaceable: what a comparison must say before a member is
// replaced: named wrong on its hash or its keys at one revision, alone;
// or not answering while every other member answers and they agree, a
// quorum. A member behind is never replaced.
func TestReplaceable(t *testing.T) {
	m := func(name, id string) Member { return Member{Member: etcdmembers.Member{Name: name, ID: id}} }
	base := func() *Report {
		return &Report{
			Members: []Member{m("m0", "a0"), m("m1", "a1"), m("m2", "a2")},
			Samples: []Sample{{Members: []MemberSample{{Member: "m0"}, {Member: "m1"}, {Member: "m2"}}}},
			Keys:    KeyComparison{Mode: ModeRevision},
			Verdict: Verdict{Basis: BasisHash, Majority: []string{"m0", "m2"}, Wrong: []string{"m1"}},
		}
	}
	down := func(r *Report) {
		r.Members[1].Unreachable = "connection refused"
		r.Samples[0].Members = []MemberSample{{Member: "m0"}, {Member: "m2"}}
		r.Verdict = Verdict{Agree: true, Reason: "each key is the same", NotCompared: []string{"m1"}}
	}
	for _, tt := range []struct {
		name   string
		change func(*Report)
		want   string
	}{
		{"named wrong on its hash", func(*Report) {}, ""},
		{"on its keys at one revision", func(r *Report) { r.Verdict.Basis = BasisKeys }, ""},
		{"on its keys' current values", func(r *Report) { r.Verdict.Basis, r.Keys.Mode = BasisKeys, ModeCurrent }, "named wrong on keys current alone"},
		{"on its member list", func(r *Report) { r.Verdict.Basis = BasisMembership }, "named wrong on membership"},
		{"the members agree", func(r *Report) { r.Verdict = Verdict{Agree: true} }, "the members agree"},
		{"no quorum", func(r *Report) { r.Verdict = Verdict{Refused: "no quorum"} }, "no member is named wrong"},
		{"another member is wrong", func(r *Report) { r.Verdict.Wrong = []string{"m2"} }, "is not the wrong member"},
		{"two members are wrong", func(r *Report) { r.Verdict.Wrong, r.Verdict.Majority = []string{"m1", "m2"}, []string{"m0"} }, "m1 and m2 are wrong"},
		{"another member does not answer", func(r *Report) { r.Members[2].Unreachable = "deadline exceeded" }, "m2 does not answer"},
		{"another member is behind", func(r *Report) { r.Members[2].Behind = &Lag{Entries: 30} }, "m2 is behind"},
		{"another member's hash failed", func(r *Report) { r.Samples[0].Members[2].Error = "deadline exceeded" }, "m2 did not answer the last hash sample"},
		{"its ID changed", func(r *Report) { r.Members[1].ID = "b1" }, "it changed meanwhile"},
		{"it is behind", func(r *Report) { r.Members[1].Behind = &Lag{Entries: 3000} }, "m1 is behind, not wrong"},
		{"it does not answer, the others agree", down, ""},
		{"it does not answer, the others differ", func(r *Report) {
			down(r)
			r.Verdict = Verdict{Basis: BasisKeys, Refused: "no quorum", NotCompared: []string{"m1"}}
		}, "the others do not agree"},
		{"it does not answer, the others' keys not compared", func(r *Report) { down(r); r.Keys.Mode = ModeNone }, "were not compared at one revision"},
		{"it does not answer, and another does not either", func(r *Report) { down(r); r.Members[2].Unreachable = "refused" }, "m2 does not answer"},
		{"it does not answer, two members in all", func(r *Report) { down(r); r.Members = r.Members[:2] }, "no quorum"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := base()
			tt.change(r)
			why, got := replaceable(r, "m1", "a1")
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) || (got == "") == (why == "") {
				t.Errorf("replaceable: why %q, refused %q; want refused %q", why, got, tt.want)
			}
		})
	}
}
