package members

import (
	"slices"
	"strings"
	"testing"
)

// TestJudge: the members outside a group of a quorum of the cluster are
// wrong; with no such group none is named, and why is said.
func TestJudge(t *testing.T) {
	for _, tc := range []struct {
		name    string
		groups  [][]string
		members int
		wrong   []string
		refused string
	}{
		{"one of three", [][]string{{"m0", "m2"}, {"m1"}}, 3, []string{"m1"}, ""},
		{"three all different", [][]string{{"m0"}, {"m1"}, {"m2"}}, 3, nil, "2 needed"},
		{"two disagreeing", [][]string{{"m0"}, {"m1"}}, 2, nil, "2 needed"},
		{"two of three answered and disagree", [][]string{{"m0"}, {"m1"}}, 3, nil, "m0 / m1"},
		{"two of five", [][]string{{"m0", "m1", "m2"}, {"m3"}, {"m4"}}, 5, []string{"m3", "m4"}, ""},
		{"no quorum of five", [][]string{{"m0", "m1"}, {"m2", "m3"}, {"m4"}}, 5, nil, "3 needed"},
		{"a quorum short of all answering", [][]string{{"m0", "m1"}, {"m2"}}, 4, nil, "3 needed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v Verdict
			judge(&v, BasisHash, tc.groups, tc.members, "one hash at revision 9")
			if !slices.Equal(v.Wrong, tc.wrong) {
				t.Errorf("wrong %v, want %v", v.Wrong, tc.wrong)
			}
			if tc.refused == "" && v.Refused != "" {
				t.Errorf("refused: %s", v.Refused)
			}
			if tc.refused != "" && !strings.Contains(v.Refused, tc.refused) {
				t.Errorf("refused %q, want it to say %q", v.Refused, tc.refused)
			}
			if len(v.Wrong) > 0 && !strings.Contains(v.Reason, "a quorum") {
				t.Errorf("reason %q does not say a quorum decided", v.Reason)
			}
		})
	}
}

// TestHashesSay: a disagreement is judged only when both samples split
// the members the same way; one the second sample does not repeat was in
// flight; one that moves is refused.
func TestHashesSay(t *testing.T) {
	sample := func(rev int64, groups ...[]string) Sample {
		return Sample{Revision: rev, Comparable: true, Groups: groups}
	}
	notComparable := Sample{Revision: 5, Why: "the members hashed from different compacted revisions"}
	for _, tc := range []struct {
		name     string
		samples  []Sample
		usable   bool
		agree    bool
		unstable bool
		note     bool
	}{
		{"agree at once", []Sample{sample(10, []string{"m0", "m1", "m2"})}, true, true, false, false},
		{"confirmed split", []Sample{sample(10, []string{"m0", "m2"}, []string{"m1"}), sample(14, []string{"m2", "m0"}, []string{"m1"})}, true, false, false, false},
		{"in flight", []Sample{sample(10, []string{"m0", "m2"}, []string{"m1"}), sample(14, []string{"m0", "m1", "m2"})}, true, true, false, true},
		{"moving split", []Sample{sample(10, []string{"m0", "m2"}, []string{"m1"}), sample(14, []string{"m0", "m1"}, []string{"m2"})}, false, false, true, false},
		{"not comparable", []Sample{notComparable, notComparable}, false, false, false, false},
		{"second alone", []Sample{notComparable, sample(14, []string{"m0", "m2"}, []string{"m1"})}, false, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := hashesSay(tc.samples)
			if h.usable != tc.usable || h.agree() != tc.agree || (h.unstable != "") != tc.unstable || (h.note != "") != tc.note {
				t.Errorf("usable %v agree %v unstable %q note %q, want %v %v %v %v", h.usable, h.agree(), h.unstable, h.note,
					tc.usable, tc.agree, tc.unstable, tc.note)
			}
			if !h.usable && h.why == "" && h.unstable == "" {
				t.Error("not usable, and no reason given")
			}
		})
	}
}

// TestRevisionsDiverged: members whose revisions are further apart than
// the raft entries between them can make numbered their revisions
// differently.
func TestRevisionsDiverged(t *testing.T) {
	ms := func(pairs ...int64) Sample {
		var s Sample
		for i := 0; i < len(pairs); i += 2 {
			s.Members = append(s.Members, MemberSample{Member: string(rune('a' + i/2)), Revision: pairs[i], AppliedIndex: uint64(pairs[i+1])})
		}
		return s
	}
	for _, tc := range []struct {
		name   string
		sample Sample
		want   bool
	}{
		{"in step", ms(500, 9000, 500, 9000, 500, 9000), false},
		{"a follower behind", ms(500, 9000, 480, 8950, 500, 9000), false},
		{"far behind at the same index (etcd#13766)", ms(700500, 9000, 500, 9000, 700500, 9000), true},
		{"ahead of what its index allows", ms(5000, 9000, 500, 9000), true},
		{"within the slack", ms(1400, 9000, 500, 9000), false},
		{"behind within the slack although it applied more", ms(500, 9000, 100, 12000), false},
		{"far behind although it applied more", ms(5000, 9000, 100, 12000), true},
		{"no applied index (etcd before 3.4)", ms(700500, 0, 500, 0), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why := revisionsDiverged(tc.sample)
			if got != tc.want {
				t.Errorf("diverged %v (%s), want %v", got, why, tc.want)
			}
			if got && why == "" {
				t.Error("diverged, and no reason given")
			}
		})
	}
}

// TestPartition: the largest group first, the members in their order.
func TestPartition(t *testing.T) {
	got := partition([]string{"m0", "m1", "m2", "m3"}, map[string]string{"m0": "a", "m1": "b", "m2": "b", "m3": "c"})
	want := [][]string{{"m1", "m2"}, {"m0"}, {"m3"}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("%v, want %v", got, want)
	}
	if !samePartition(got, [][]string{{"m3"}, {"m2", "m1"}, {"m0"}}) || samePartition(got, [][]string{{"m0", "m1"}, {"m2"}, {"m3"}}) {
		t.Error("samePartition does not compare the groups as sets")
	}
}
