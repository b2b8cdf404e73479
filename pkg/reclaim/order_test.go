package reclaim

import (
	"strings"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

func names(ms []Member) string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Name)
	}
	return strings.Join(out, ",")
}

func TestInOrderLeaderLast(t *testing.T) {
	for _, tc := range []struct {
		name    string
		members []Member
		want    string
	}{
		{"the leader first in the list", []Member{{Name: "m0", Leader: true}, {Name: "m2"}, {Name: "m1"}}, "m1,m2,m0"},
		{"a learner after the leader", []Member{{Name: "a", Learner: true}, {Name: "b", Leader: true}, {Name: "c"}}, "c,b,a"},
		{"one member", []Member{{Name: "m0", Leader: true}}, "m0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := names(inOrder(tc.members)); got != tc.want {
				t.Errorf("inOrder = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestPick: the next member is a follower while one is left, whatever the
// leader was when the run started; the leader only last.
func TestPick(t *testing.T) {
	three := func(leader string) []Member {
		var out []Member
		for _, n := range []string{"m0", "m1", "m2"} {
			out = append(out, Member{Name: n, ID: n, Leader: n == leader})
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		members []Member
		done    []string
		want    string
	}{
		{"a follower first", three("m0"), nil, "m1"},
		{"the other follower", three("m0"), []string{"m1"}, "m2"},
		{"the leader last", three("m0"), []string{"m1", "m2"}, "m0"},
		{"leadership moved to a member not done", three("m2"), []string{"m1"}, "m0"},
		{"leadership moved to a member done", three("m1"), []string{"m1"}, "m0"},
		{"every member done", three("m0"), []string{"m0", "m1", "m2"}, ""},
		{"no leader known", three(""), []string{"m0"}, "m1"},
		{"a learner is never picked", []Member{{Name: "l", ID: "l", Learner: true}, {Name: "m0", ID: "m0", Leader: true}}, []string{"m0"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done := map[string]bool{}
			for _, d := range tc.done {
				done[d] = true
			}
			got := ""
			if m := pick(tc.members, done); m != nil {
				got = m.Name
			}
			if got != tc.want {
				t.Errorf("pick = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRefusals(t *testing.T) {
	healthy := func(name string, leader bool) Member {
		return Member{Name: name, Endpoint: name + ":2379", Healthy: true, Leader: leader}
	}
	ok := Plan{Members: []Member{healthy("m1", false), healthy("m0", true)}, Snapshot: SnapshotPlan{Fits: true}}
	for _, tc := range []struct {
		name string
		edit func(p *Plan)
		want string
	}{
		{"everything fine", func(*Plan) {}, ""},
		{"NOSPACE is what reclaim is for", func(p *Plan) { p.Alarms = []Alarm{{Member: "m0", Type: "NOSPACE", typ: pb.AlarmType_NOSPACE}} }, ""},
		{"a member down", func(p *Plan) {
			p.Members[0].Healthy, p.Members[0].Problem = false, "it does not answer Status: deadline exceeded"
		},
			"member m1 (m1:2379) is not healthy: it does not answer Status: deadline exceeded"},
		{"no leader", func(p *Plan) { p.Members[1].Leader = false }, "no member leads the cluster"},
		{"a corrupt member", func(p *Plan) { p.Alarms = []Alarm{{Member: "m1", Type: "CORRUPT", typ: pb.AlarmType_CORRUPT}} }, "member m1 raised the CORRUPT alarm"},
		{"no room for the snapshot", func(p *Plan) { p.Snapshot = SnapshotPlan{Why: "it needs 900 MiB"} }, "the snapshot does not fit: it needs 900 MiB"},
		{"no room for a rewrite here", func(p *Plan) { p.Members[1].Disk = Disk{Checked: true, Why: "the rewrite needs 2000 MiB"} },
			"member m0's disk cannot hold the rewrite: the rewrite needs 2000 MiB"},
		{"a disk not checked is no refusal", func(p *Plan) { p.Members[1].Disk = Disk{Why: "not on this node"} }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := ok
			p.Members = append([]Member{}, ok.Members...)
			tc.edit(&p)
			got := strings.Join(refusals(&p), "; ")
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("refusals = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestStatusErrors(t *testing.T) {
	got := statusErrors([]string{"memberID:3319814642761637952 alarm:NOSPACE", "memberID:1  alarm:CORRUPT", "etcdserver: no leader"})
	if strings.Join(got, "|") != "memberID:1  alarm:CORRUPT|etcdserver: no leader" {
		t.Errorf("statusErrors = %q", got)
	}
}

func TestMetricsURL(t *testing.T) {
	for _, tc := range []struct {
		ep   string
		tls  bool
		want string
	}{
		{"https://10.0.0.1:2379", true, "https://10.0.0.1:2379/metrics"},
		{"http://127.0.0.1:2379/", false, "http://127.0.0.1:2379/metrics"},
		{"127.0.0.1:2379", true, "https://127.0.0.1:2379/metrics"},
		{"127.0.0.1:2379", false, "http://127.0.0.1:2379/metrics"},
	} {
		if got, err := metricsURL(tc.ep, tc.tls); err != nil || got != tc.want {
			t.Errorf("metricsURL(%q, %v) = %q, %v; want %q", tc.ep, tc.tls, got, err, tc.want)
		}
	}
}

func TestLocalMember(t *testing.T) {
	for _, tc := range []struct {
		name    string
		members []Member
		want    int
		err     string
	}{
		{"one member", []Member{{Name: "a", Endpoint: "https://192.0.2.10:2379"}}, 0, ""},
		{"the one on loopback", []Member{{Name: "a", Endpoint: "https://192.0.2.10:2379"}, {Name: "b", urls: []string{"https://localhost:2379"}}}, 1, ""},
		{"none here", []Member{{Name: "a", Endpoint: "https://192.0.2.10:2379"}, {Name: "b", Endpoint: "https://192.0.2.11:2379"}}, 0, "no member of the cluster listens on this host"},
		{"several here", []Member{{Name: "b", Endpoint: "127.0.0.1:2379"}, {Name: "a", Endpoint: "http://127.0.0.1:22379"}}, 0, "members a, b all listen on this host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := localMember(tc.members)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("localMember error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("localMember = %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}
