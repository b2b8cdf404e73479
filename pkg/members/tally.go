package members

import (
	"cmp"
	"encoding/hex"
	"slices"
	"strings"

	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/space"
)

// tally classifies the differing keys one at a time and keeps what the
// report says of them: groups by member and kind, the first keys one by
// one, and which members ever hold different copies. It holds no value.
type tally struct {
	mode     string
	names    []string
	registry string
	maxKeys  int

	differ, unlisted int64
	// revisionOnly counts keys every member holds with the same value but
	// other revisions.
	revisionOnly int64
	groups       map[groupKey]*groupAcc
	keys         []KeyDiff
	// sources are, for each listed key, the member whose copy is decoded.
	sources []int
	// apart[i][j] is set once members i and j held different copies of a
	// key.
	apart [][]bool
}

type groupKey struct{ member, kind string }

type groupAcc struct {
	keys        int64
	first, last int64
	resources   map[string]int64
}

func newTally(mode string, names []string, registry string, maxKeys int) *tally {
	apart := make([][]bool, len(names))
	for i := range apart {
		apart[i] = make([]bool, len(names))
	}
	return &tally{mode: mode, names: names, registry: registry, maxKeys: maxKeys, groups: map[groupKey]*groupAcc{}, apart: apart}
}

// classify says how each copy differs from the majority's copy (the copy
// more than half of the members hold): "" for the majority's own, else
// Missing, Extra, ValueDiffers or RevisionDiffers; NoMajority for every
// member when no copy has a majority. maj is a member holding the
// majority's copy (-1: none). revisionOnly is set when every member holds
// the key, all with one value, at other revisions.
func classify(recs []*record, mode string) (kinds []string, maj int, revisionOnly bool) {
	n := len(recs)
	variant := make([]int, n)
	count := make([]int, n)
	for i := range recs {
		variant[i] = i
		for j := 0; j < i; j++ {
			if same(recs[i], recs[j], mode) {
				variant[i] = variant[j]
				break
			}
		}
		count[variant[i]]++
	}
	maj = -1
	for i := range recs {
		if 2*count[variant[i]] > n {
			maj = i
			break
		}
	}
	kinds = make([]string, n)
	revisionOnly = true
	for i, r := range recs {
		if r == nil || recs[0] == nil || r.sum != recs[0].sum {
			revisionOnly = false
		}
		switch {
		case maj < 0:
			kinds[i] = NoMajority
		case variant[i] == variant[maj]:
		case recs[maj] == nil:
			kinds[i] = Extra
		case r == nil:
			kinds[i] = Missing
		case r.sum != recs[maj].sum:
			kinds[i] = ValueDiffers
		default:
			kinds[i] = RevisionDiffers
		}
	}
	return kinds, maj, revisionOnly
}

// add takes one differing key.
func (t *tally) add(key string, recs []*record) {
	kinds, maj, revisionOnly := classify(recs, t.mode)
	if slices.IndexFunc(kinds, func(k string) bool { return k != "" }) < 0 {
		return // the same copy everywhere after all
	}
	t.differ++
	if revisionOnly {
		t.revisionOnly++
	}
	for i := range recs {
		for j := i + 1; j < len(recs); j++ {
			if !same(recs[i], recs[j], t.mode) {
				t.apart[i][j], t.apart[j][i] = true, true
			}
		}
	}
	res := t.resource(key)
	if maj < 0 {
		first, last := int64(-1), int64(-1)
		for _, r := range recs {
			if r != nil {
				if first < 0 || r.mod < first {
					first = r.mod
				}
				last = max(last, r.mod)
			}
		}
		t.count(groupKey{"", NoMajority}, first, last, res)
	} else {
		for i, k := range kinds {
			switch k {
			case "":
			case Extra:
				t.count(groupKey{t.names[i], k}, recs[i].mod, recs[i].mod, res)
			default:
				t.count(groupKey{t.names[i], k}, recs[maj].mod, recs[maj].mod, res)
			}
		}
	}
	if len(t.keys) >= t.maxKeys {
		t.unlisted++
		return
	}
	t.keys = append(t.keys, t.keyDiff(key, recs, kinds, maj))
	src := maj
	if src < 0 || recs[src] == nil {
		src = slices.IndexFunc(recs, func(r *record) bool { return r != nil })
	}
	t.sources = append(t.sources, src)
}

// count adds one key, written between the revisions first and last, to
// a group.
func (t *tally) count(k groupKey, first, last int64, res string) {
	g := t.groups[k]
	if g == nil {
		g = &groupAcc{first: first, last: last, resources: map[string]int64{}}
		t.groups[k] = g
	}
	g.first, g.last = min(g.first, first), max(g.last, last)
	g.keys++
	g.resources[res]++
}

// keyDiff is the listed form of a differing key.
func (t *tally) keyDiff(key string, recs []*record, kinds []string, maj int) KeyDiff {
	d := KeyDiff{Key: key, Majority: []string{}}
	if k, err := etcdscan.ParseKey(t.registry, key); err == nil {
		d.Resource, d.Namespace, d.Name = k.Prefix, k.Namespace, k.Name
	}
	for i, r := range recs {
		if maj >= 0 && kinds[i] == "" {
			d.Majority = append(d.Majority, t.names[i])
		}
		s := KeyState{Member: t.names[i], Difference: kinds[i]}
		if r != nil {
			s.Present, s.SHA256, s.Size = true, hex.EncodeToString(r.sum[:]), r.size
			s.CreateRevision, s.ModRevision, s.Version, s.Lease = r.create, r.mod, r.version, r.leaseID
		}
		d.States = append(d.States, s)
	}
	return d
}

// resource is the storage prefix a key is under, space.OutsidePrefix for
// a key outside the registry prefix.
func (t *tally) resource(key string) string {
	rest, ok := strings.CutPrefix(key, t.registry)
	if !ok {
		return space.OutsidePrefix
	}
	if k, err := etcdscan.ParseKey(t.registry, key); err == nil {
		return k.Prefix
	}
	first, _, _ := strings.Cut(rest, "/")
	return first
}

// partition groups the members by the copies they hold: two members are
// together when they never held different copies of a key.
func (t *tally) partition() [][]string {
	var groups [][]int
	for i := range t.names {
		placed := false
		for g, members := range groups {
			if !t.apart[i][members[0]] {
				groups[g] = append(groups[g], i)
				placed = true
				break
			}
		}
		if !placed {
			groups = append(groups, []int{i})
		}
	}
	out := make([][]string, len(groups))
	for g, members := range groups {
		for _, i := range members {
			out[g] = append(out[g], t.names[i])
		}
	}
	slices.SortStableFunc(out, func(a, b []string) int { return cmp.Compare(len(b), len(a)) })
	return out
}

// result is the groups, the largest first.
func (t *tally) result() []Group {
	out := make([]Group, 0, len(t.groups))
	for k, g := range t.groups {
		gr := Group{Member: k.member, Difference: k.kind, Keys: g.keys, FirstRevision: g.first, LastRevision: g.last}
		for res, n := range g.resources {
			gr.Resources = append(gr.Resources, Count{Resource: res, Keys: n})
		}
		slices.SortFunc(gr.Resources, func(a, b Count) int {
			return cmp.Or(cmp.Compare(b.Keys, a.Keys), cmp.Compare(a.Resource, b.Resource))
		})
		out = append(out, gr)
	}
	slices.SortFunc(out, func(a, b Group) int {
		return cmp.Or(cmp.Compare(b.Keys, a.Keys), cmp.Compare(a.Member, b.Member), cmp.Compare(a.Difference, b.Difference))
	})
	return out
}
