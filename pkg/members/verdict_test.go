package members

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/regghost/regghost/pkg/etcdmembers"
)

// TestDecide: the verdict rests on the hashes when they can be judged and
// differ, else on the keys, the leases, the member lists, in that order;
// hashes that moved between the samples name no member; too little
// compared is not an agreement.
func TestDecide(t *testing.T) {
	three := [][]string{{"m0", "m1", "m2"}}
	split := [][]string{{"m0", "m2"}, {"m1"}}
	keysSplit := func() *tally {
		tl := newTally(ModeRevision, []string{"m0", "m1", "m2"}, "/registry/", 10)
		a := &record{key: "/registry/pods/ns/a", mod: 4}
		tl.add(a.key, []*record{a, a, nil})
		return tl
	}
	for _, tc := range []struct {
		name          string
		h             hashFinding
		t             *tally
		leases, lists [][]string
		agree         bool
		unknown       bool
		basis         string
		wrong         []string
		refused       string
		// etcd is set when the verdict may say what etcd's own check
		// decides: only on hashes kept from a compaction.
		etcd bool
	}{
		{name: "all agree", h: hashFinding{usable: true, groups: three, rev: 7}, leases: three, lists: three, agree: true},
		{name: "hashes split", h: hashFinding{usable: true, groups: split, rev: 7, kind: HashFull}, t: keysSplit(), leases: three, lists: three,
			basis: BasisHash, wrong: []string{"m1"}},
		{name: "compaction hashes split", h: hashFinding{usable: true, groups: split, rev: 7, kind: HashCompaction}, leases: three, lists: three,
			basis: BasisHash, wrong: []string{"m1"}, etcd: true},
		{name: "hashes moved", h: hashFinding{unstable: "the hashes split the members one way"}, t: keysSplit(), leases: three, lists: three,
			basis: BasisHash, refused: "one way"},
		{name: "hashes not comparable, keys differ", h: hashFinding{why: "compacted revisions differ"}, t: keysSplit(), leases: three, lists: three,
			basis: BasisKeys, wrong: []string{"m2"}},
		{name: "keys agree, leases differ", h: hashFinding{usable: true, groups: three, rev: 7}, leases: split, lists: three,
			basis: BasisLeases, wrong: []string{"m1"}},
		{name: "member lists differ", h: hashFinding{usable: true, groups: three, rev: 7}, leases: three, lists: [][]string{{"m0"}, {"m1"}, {"m2"}},
			basis: BasisMembership, refused: "no quorum"},
		{name: "nothing comparable", h: hashFinding{why: "compacted revisions differ"}, leases: three, lists: three, unknown: true, refused: "not compared"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &run{rep: &Report{Members: []Member{named("m0"), named("m1"), named("m2")}}}
			r.decide(tc.h, tc.t, tc.leases, tc.lists)
			v := r.rep.Verdict
			if v.Agree != tc.agree || v.Unknown != tc.unknown || v.Basis != tc.basis || !slices.Equal(v.Wrong, tc.wrong) ||
				!strings.Contains(v.Refused, tc.refused) || (tc.refused == "") != (v.Refused == "") {
				t.Errorf("verdict %+v, want agree %v unknown %v basis %q wrong %v refused %q", v, tc.agree, tc.unknown, tc.basis, tc.wrong, tc.refused)
			}
			if v.Reason == "" {
				t.Error("the verdict gives no reason")
			}
			if says := strings.Contains(v.Reason, "etcd"); says != tc.etcd {
				t.Errorf("the reason says what etcd decides: %v, want %v: %s", says, tc.etcd, v.Reason)
			}
		})
	}
}

func named(name string) Member { return Member{Member: etcdmembers.Member{Name: name}} }

// TestUnsure: a comparison that could not decide, or that left a member
// out, says why; a verdict (agree or differ) is no error.
func TestUnsure(t *testing.T) {
	for _, tt := range []struct {
		v    Verdict
		want string
	}{
		{Verdict{Agree: true}, ""},
		{Verdict{}, ""},
		{Verdict{Behind: []string{"m0"}, NotCompared: []string{"m1"}}, ""},
		{Verdict{Unknown: true, Refused: "no quorum"}, "could not tell whether the members agree: no quorum"},
		{Verdict{Agree: true, NotCompared: []string{"m1"}}, "m1 did not answer and was not compared"},
		{Verdict{Agree: true, Behind: []string{"m0", "m2"}}, "m0, m2 are behind and were not compared: compare again once caught up"},
	} {
		err := (&Report{Verdict: tt.v}).Unsure()
		if got := fmt.Sprint(err); (err == nil) != (tt.want == "") || (err != nil && got != tt.want) {
			t.Errorf("%+v: %v, want %q", tt.v, err, tt.want)
		}
	}
}
