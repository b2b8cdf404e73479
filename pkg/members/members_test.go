package members

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/regghost/regghost/internal/etcdtest"
)

func configMap(t *testing.T, name, data string) string {
	return etcdtest.Encode(t, &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Data: map[string]string{"k": data}})
}

// TestCompareMembers runs on three embedded members, changed one step
// after another by editing a stopped member's db: every member agrees;
// then one follower lacks a key, holds another value of a second and a
// key more, and exactly those keys and that member are named; then a
// second follower lacks another key, and no member is named wrong (three
// hashes, no majority) while every key is still named.
func TestCompareMembers(t *testing.T) {
	c := startCluster(t, 3)
	ctx := context.Background()
	for i := 0; i < 20; i++ {
		etcdtest.Put(t, c.cli, fmt.Sprintf("/registry/configmaps/default/cm-%d", i), configMap(t, fmt.Sprintf("cm-%d", i), "v1"))
	}
	for i := 0; i < 20; i += 4 {
		etcdtest.Put(t, c.cli, fmt.Sprintf("/registry/configmaps/default/cm-%d", i), configMap(t, fmt.Sprintf("cm-%d", i), "v2"))
	}
	etcdtest.Put(t, c.cli, "compact_rev_key", "x")
	lease, err := c.cli.Grant(ctx, 3600)
	if err != nil {
		t.Fatal(err)
	}
	cm := func(i int) string { return fmt.Sprintf("/registry/configmaps/default/cm-%d", i) }
	ghost := "/registry/configmaps/default/ghost"
	edited := map[string]int{}
	for _, step := range []struct {
		name string
		// edit names the member it edits ("A", "B": a follower not edited
		// before) and its edits; empty: none.
		edit  string
		edits []func(*testing.T, *bbolt.Bucket)
		// down names an edited member to stop.
		down    string
		keys    string
		current bool
		// agree, wrong (edit names) and refused are the verdict.
		agree   bool
		wrong   []string
		refused string
		// mode is the comparison of the keys, differing the keys that
		// differ ("key A:difference").
		mode      string
		differing []string
	}{
		{name: "every member agrees", agree: true, mode: ModeNone},
		{name: "every member agrees, key by key", keys: KeysAlways, agree: true, mode: ModeRevision},
		{
			name: "one member is wrong", edit: "A",
			edits: []func(*testing.T, *bbolt.Bucket){dropKey(cm(3)), setValue(cm(5), "corrupt"), addKey(ghost, configMap(t, "ghost", "x"))},
			wrong: []string{"A"}, mode: ModeRevision,
			differing: []string{cm(3) + " A:missing", cm(5) + " A:value", ghost + " A:extra"},
		},
		{
			name: "two members are wrong differently", edit: "B", edits: []func(*testing.T, *bbolt.Bucket){dropKey(cm(7))},
			refused: "no quorum", mode: ModeRevision,
			differing: []string{cm(3) + " A:missing", cm(5) + " A:value", cm(7) + " B:missing", ghost + " A:extra"},
		},
		{
			name: "two members are wrong differently, current values", current: true,
			refused: "no quorum", mode: ModeCurrent,
			differing: []string{cm(3) + " A:missing", cm(5) + " A:value", cm(7) + " B:missing", ghost + " A:extra"},
		},
		{
			name: "one of two members left is wrong", down: "B",
			refused: "no quorum", mode: ModeRevision,
			differing: []string{cm(3) + " A:no-majority", cm(3) + " G:no-majority", cm(5) + " A:no-majority", cm(5) + " G:no-majority",
				ghost + " A:no-majority", ghost + " G:no-majority"},
		},
	} {
		t.Run(step.name, func(t *testing.T) {
			if step.edit != "" {
				var not []int
				for _, i := range edited {
					not = append(not, i)
				}
				i := c.follower(t, not...)
				c.edit(t, i, step.edits...)
				edited[step.edit] = i
			}
			if step.down != "" {
				c.stop(edited[step.down])
				c.leader(t)
			}
			name := func(s string) string {
				if s == "G" { // the member never edited
					for i, n := range c.names {
						if !slices.Contains(slices.Collect(maps.Values(edited)), i) {
							return n
						}
					}
				}
				return c.names[edited[s]]
			}
			o := c.options()
			o.Keys, o.Current, o.Hash = step.keys, step.current, HashFull
			if step.down != "" {
				o.Timeout = 2 * time.Second // what a member down costs, twice
			}
			rep, err := Compare(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			v := rep.Verdict
			var wrong []string
			for _, w := range step.wrong {
				wrong = append(wrong, name(w))
			}
			if v.Agree != step.agree || !slices.Equal(v.Wrong, wrong) || !strings.Contains(v.Refused, step.refused) || (step.refused == "") != (v.Refused == "") {
				t.Errorf("verdict %+v, want agree %v, wrong %v, refused %q", v, step.agree, wrong, step.refused)
			}
			if rep.Differ() == step.agree {
				t.Errorf("Differ() %v with a verdict that agree is %v", rep.Differ(), step.agree)
			}
			if !step.agree && v.Basis != BasisHash {
				t.Errorf("basis %q, want the hashes", v.Basis)
			}
			if rep.Keys.Mode != step.mode {
				t.Errorf("keys compared %q (%s), want %q", rep.Keys.Mode, rep.Keys.Why, step.mode)
			}
			var want []string
			for _, d := range step.differing {
				k, who, _ := strings.Cut(d, " ")
				m, diff, _ := strings.Cut(who, ":")
				want = append(want, k+" "+name(m)+":"+diff)
			}
			var got []string
			for _, d := range rep.Keys.Keys {
				for _, s := range d.States {
					if s.Difference != "" {
						got = append(got, d.Key+" "+s.Member+":"+s.Difference)
					}
				}
				if d.Kind != "ConfigMap" || d.Namespace != "default" {
					t.Errorf("%s decoded as %s in %q (%s), want a ConfigMap in default", d.Key, d.Kind, d.Namespace, d.DecodeError)
				}
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("differing keys:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if rep.Keys.Differ != int64(len(rep.Keys.Keys)) || len(rep.Keys.Keys) != len(slices.CompactFunc(slices.Clone(want), func(a, b string) bool {
				ka, _, _ := strings.Cut(a, " ")
				kb, _, _ := strings.Cut(b, " ")
				return ka == kb
			})) {
				t.Errorf("%d keys differ (%d listed), want %v", rep.Keys.Differ, len(rep.Keys.Keys), want)
			}
			if step.mode != ModeNone && rep.Keys.Distinct < 21 {
				t.Errorf("%d distinct keys read, want at least 21", rep.Keys.Distinct)
			}
			if step.agree != (len(rep.Samples) == 1) {
				t.Errorf("%d hash samples, want one when they agree at once, else two", len(rep.Samples))
			}
			if !rep.Leases.Compared || len(rep.Leases.Differ) > 0 || !rep.Membership.Compared || len(rep.Membership.Views) != 1 {
				t.Errorf("leases %+v, membership %+v: want both compared, the same on every member", rep.Leases, rep.Membership)
			}
			for _, cnt := range rep.Leases.Counts {
				if cnt.Count != 1 {
					t.Errorf("%s holds %d leases, want 1 (%x)", cnt.Member, cnt.Count, lease.ID)
				}
			}
			for _, m := range rep.Members {
				if step.down != "" && m.Name == name(step.down) {
					if m.Unreachable == "" || !slices.Equal(v.NotCompared, []string{m.Name}) || !rep.Incomplete() {
						t.Errorf("member %s is down; the report says %+v, not compared %v", m.Name, m, v.NotCompared)
					}
					continue
				}
				if m.Revision == 0 || m.AppliedIndex == 0 || m.DBSize == 0 || m.Endpoint == "" || m.Unreachable != "" {
					t.Errorf("member %+v lacks its evidence", m)
				}
			}
		})
	}
}

// TestCompareByCompactionHashes: by default the members are compared on
// the hashes etcd kept from its newest compaction (read at no cost) and
// their keys at one revision. A member that restarted since the
// compaction computes its hash over another history, which is not
// compared (the keys decide); once all of them compacted again, the kept
// hashes name the member whose keys differ, as etcd's own compaction
// check would.
func TestCompareByCompactionHashes(t *testing.T) {
	c := startCluster(t, 3)
	ctx := context.Background()
	for i := 0; i < 20; i++ {
		etcdtest.Put(t, c.cli, fmt.Sprintf("/registry/configmaps/default/cm-%d", i), configMap(t, fmt.Sprintf("cm-%d", i), "v1"))
	}
	compact := func() {
		t.Helper()
		resp, err := c.cli.Get(ctx, "x")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.cli.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
			t.Fatal(err)
		}
	}
	compare := func() *Report {
		t.Helper()
		rep, err := Compare(ctx, c.options())
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	compact()
	rep := compare()
	if s := rep.Samples; len(s) != 1 || s[0].Kind != HashCompaction || !s[0].Comparable || !rep.Verdict.Agree || rep.Keys.Mode != ModeRevision {
		t.Fatalf("after a compaction: samples %+v, verdict %+v, keys %q", rep.Samples, rep.Verdict, rep.Keys.Mode)
	}
	for _, m := range rep.Samples[0].Members {
		if m.Computed {
			t.Errorf("%s computed its hash of the compaction: it should have kept it", m.Member)
		}
	}

	w := c.follower(t)
	c.edit(t, w, dropKey("/registry/configmaps/default/cm-3"))
	rep = compare()
	s := rep.Samples[0]
	if s.Comparable || !strings.Contains(s.Why, "different compacted revisions") || rep.Verdict.Basis != BasisKeys ||
		!slices.Equal(rep.Verdict.Wrong, []string{c.names[w]}) {
		t.Errorf("a member restarted since the compaction: sample %+v, verdict %+v", s, rep.Verdict)
	}
	if !strings.Contains(strings.Join(rep.Notes, "\n"), c.names[w]+" held no hash kept from compaction") {
		t.Errorf("the notes do not say %s computed its hash: %v", c.names[w], rep.Notes)
	}

	etcdtest.Put(t, c.cli, "/registry/configmaps/default/after", configMap(t, "after", "v1"))
	compact()
	rep = compare()
	if s := rep.Samples[0]; !s.Comparable || rep.Verdict.Basis != BasisHash || !slices.Equal(rep.Verdict.Wrong, []string{c.names[w]}) ||
		!strings.Contains(rep.Verdict.Reason, "etcd's own compaction hash check") {
		t.Errorf("every member compacted again: sample %+v, verdict %+v", s, rep.Verdict)
	}
}
