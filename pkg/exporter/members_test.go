package exporter

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"github.com/regghost/regghost/pkg/etcdmembers"
	"github.com/regghost/regghost/pkg/members"
)

// TestMembersWatch: the last comparison's per-member revision, hash and
// differing keys, which member is wrong and whether they agree; a failed
// comparison keeps the last one's series with comparison_ok 0; a member
// behind is exported as behind, never wrong; a member that stops
// answering keeps its last known state; on kine the watch stops and
// serves nothing.
func TestMembersWatch(t *testing.T) {
	rep := &members.Report{
		Members: []members.Member{member("m0", 41), member("m1", 40), member("m2", 41), {Member: etcdmembers.Member{Name: "m3", Learner: true}},
			{Member: etcdmembers.Member{Name: "m4", Revision: 30}, Behind: &members.Lag{Entries: 1200, Revisions: 11}}},
		Samples: []members.Sample{{Revision: 40, Comparable: true, Members: []members.MemberSample{
			{Member: "m0", Revision: 41, Hash: "f6b26a33"}, {Member: "m1", Revision: 40, Hash: "1b29a196"}, {Member: "m2", Revision: 41, Hash: "f6b26a33"}}}},
		Keys:    members.KeyComparison{Groups: []members.Group{{Member: "m1", Difference: "missing", Keys: 2}, {Member: "m1", Difference: "extra", Keys: 1}}},
		Verdict: members.Verdict{Majority: []string{"m0", "m2"}, Wrong: []string{"m1"}, Behind: []string{"m4"}},
	}
	var fail error
	w := &MembersWatch{Compare: func(context.Context) (*members.Report, error) { return rep, fail }}
	names := []string{"regghost_etcd_members_agree", "regghost_etcd_members_comparison_ok", "regghost_etcd_members_hash_revision",
		"regghost_etcd_member_revision", "regghost_etcd_member_hash", "regghost_etcd_member_differing_keys", "regghost_etcd_member_wrong",
		"regghost_etcd_member_up", "regghost_etcd_member_behind_entries", "regghost_etcd_member_last_known_revision"}
	scrape := func() string {
		out, err := testutil.CollectAndFormat(w, expfmt.TypeTextPlain, names...)
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		for _, l := range strings.Split(string(out), "\n") {
			if l != "" && !strings.HasPrefix(l, "#") {
				lines = append(lines, l)
			}
		}
		return strings.Join(lines, "\n")
	}
	if got := scrape(); got != "" {
		t.Errorf("before the first comparison: %s", got)
	}
	if err := w.Once(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`regghost_etcd_member_differing_keys{member="m0"} 0`, `regghost_etcd_member_differing_keys{member="m1"} 3`,
		`regghost_etcd_member_hash{member="m0"} 4.138887731e+09`, `regghost_etcd_member_hash{member="m1"} 4.55713174e+08`,
		`regghost_etcd_member_revision{member="m1"} 40`, `regghost_etcd_member_wrong{member="m1"} 1`, `regghost_etcd_member_wrong{member="m2"} 0`,
		`regghost_etcd_members_agree 0`, `regghost_etcd_members_comparison_ok 0`, `regghost_etcd_members_hash_revision 40`,
		`regghost_etcd_member_behind_entries{member="m4"} 1200`, `regghost_etcd_member_wrong{member="m4"} 0`, `regghost_etcd_member_up{member="m4"} 1`,
		`regghost_etcd_member_behind_entries{member="m1"} 0`, `regghost_etcd_member_last_known_revision{member="m2"} 41`,
	}
	got := scrape()
	for _, l := range want {
		if !strings.Contains(got, l) {
			t.Errorf("misses %s in:\n%s", l, got)
		}
	}
	if strings.Contains(got, `member="m3"`) {
		t.Errorf("a learner has series:\n%s", got)
	}
	// m2 stops answering: up 0, its last known revision kept.
	rep.Members[2] = members.Member{Member: etcdmembers.Member{Name: "m2", Unreachable: "connection refused"}}
	_ = w.Once(context.Background())
	if got := scrape(); !strings.Contains(got, `regghost_etcd_member_up{member="m2"} 0`) || !strings.Contains(got, `regghost_etcd_member_last_known_revision{member="m2"} 41`) {
		t.Errorf("after m2 stopped answering:\n%s", got)
	} else if strings.Contains(got, `regghost_etcd_member_behind_entries{member="m2"}`) {
		t.Errorf("m2 does not answer, yet it is exported caught up (behind 0):\n%s", got)
	}
	fail = fmt.Errorf("m2 does not answer")
	rep = nil
	_ = w.Once(context.Background())
	if got := scrape(); !strings.Contains(got, "regghost_etcd_members_comparison_ok 0") || !strings.Contains(got, `regghost_etcd_member_wrong{member="m1"} 1`) {
		t.Errorf("after a failed comparison:\n%s", got)
	}

	kine := &MembersWatch{Compare: func(context.Context) (*members.Report, error) {
		return nil, fmt.Errorf("%w: kine", members.ErrNotEtcd)
	}}
	kine.Run(context.Background())
	if out, _ := testutil.CollectAndFormat(kine, expfmt.TypeTextPlain, names...); strings.Contains(string(out), "regghost_") {
		t.Errorf("kine serves members series:\n%s", out)
	}
}

func member(name string, rev int64) members.Member {
	return members.Member{Member: etcdmembers.Member{Name: name, Revision: rev}}
}
