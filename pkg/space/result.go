package space

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/regghost/regghost/pkg/etcdscan"
)

// ghostTally is the findings by class, and every ghost together.
type ghostTally struct {
	classes map[etcdscan.Class]*classAcc
	all     Usage
}

type classAcc struct {
	ClassGroup
	// ns is the bytes of the class in each namespace.
	ns map[string]int64
}

// classNamespaces is how many namespaces a class names.
const classNamespaces = 3

// Ghosts sizes the findings of rep (read once, from its spill file when it
// has one) by their most severe class, and the ghosts among them by
// resource and namespace: what a purge would remove. Call it once the scan
// and, for a db file, WalkFile are done.
func (a *Account) Ghosts(rep *etcdscan.Report) error {
	g := &ghostTally{classes: map[etcdscan.Class]*classAcc{}}
	err := rep.Each(func(f *etcdscan.Finding) error {
		if len(f.Classes) == 0 {
			return nil
		}
		key := []byte(f.Key)
		u, ok := a.usageOf(key)
		if !ok {
			// Not read by the counted walk (a scan of one namespace).
			u = Usage{Keys: 1}
		}
		c := g.classes[f.Classes[0]]
		if c == nil {
			c = &classAcc{ClassGroup: ClassGroup{Class: string(f.Classes[0]), Ghost: f.Classes[0].Ghost()}, ns: map[string]int64{}}
			g.classes[f.Classes[0]] = c
		}
		c.add(u)
		if f.Namespace != "" {
			c.ns[f.Namespace] += u.AllBytes()
		}
		if f.Ghost {
			g.all.add(u)
			a.now.addGhost(key, u)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read findings: %w", err)
	}
	a.ghosts = g
	return nil
}

// usageOf is what a key that exists now holds: its value and its history.
func (a *Account) usageOf(key []byte) (Usage, bool) {
	h := a.hash(key)
	if a.walk != nil {
		id, ok := a.walk.index.get(h)
		if !ok || !a.walk.stats[id].exists() {
			return Usage{}, false
		}
		s := a.walk.stats[id]
		u := Usage{Keys: 1, Bytes: int64(s.last)}
		u.HistoryRevisions, u.Tombstones = int64(s.revs)-1, int64(s.tombs)
		u.HistoryBytes = int64(s.bytes) - u.Bytes
		return u, true
	}
	n, ok := a.keys[h]
	if !ok {
		return Usage{}, false
	}
	u := Usage{Keys: 1, Bytes: int64(n.bytes)}
	u.HistoryRevisions, u.HistoryRevisionsMax = int64(n.histMin), int64(n.histMax)
	u.HistoryBytes, u.HistoryBytesMax = int64(n.histMin)*u.Bytes, int64(n.histMax)*u.Bytes
	return u, true
}

// Report is what was counted. The caller adds the members, alarms or
// pages, and the source.
func (a *Account) Report() *Report {
	r := &Report{Prefix: a.o.Prefix, CompactRevision: a.o.CompactRevision, ExactHistory: a.walk != nil}
	now := a.now
	if w := a.walk; w != nil {
		r.CompactRevision = w.compact
		now = mergeWalk(a.now, w.history)
		for _, s := range w.stats {
			if !s.exists() {
				r.Total.DeletedKeys++
			}
		}
		now.total.DeletedKeys = r.Total.DeletedKeys
	}
	r.Total, r.Outside = now.total, now.outside
	r.Resources, r.Namespaces = now.resources.ranked(), now.namespaces.ranked()
	if a.ghosts != nil {
		r.Ghosts = a.ghosts.all
		for _, c := range a.ghosts.classes {
			names := make([]string, 0, len(c.ns))
			for n := range c.ns {
				names = append(names, n)
			}
			slices.SortFunc(names, func(x, y string) int {
				if d := cmp.Compare(c.ns[y], c.ns[x]); d != 0 {
					return d
				}
				return cmp.Compare(x, y)
			})
			c.Namespaces = names[:min(len(names), classNamespaces)]
			r.Classes = append(r.Classes, c.ClassGroup)
		}
		slices.SortFunc(r.Classes, func(x, y ClassGroup) int {
			if d := cmp.Compare(y.AllBytes(), x.AllBytes()); d != 0 {
				return d
			}
			return cmp.Compare(x.Class, y.Class)
		})
	}
	for _, it := range a.largest.sorted() {
		res, ns := a.names(it.key)
		r.LargestKeys = append(r.LargestKeys, KeySize{Key: it.key, Resource: res, Namespace: ns, Bytes: it.score})
	}
	if w := a.walk; w != nil {
		for _, it := range w.most.sorted() {
			s := w.stats[it.id]
			res, ns := a.names(it.key)
			r.MostRevisions = append(r.MostRevisions, KeyRevisions{Key: it.key, Resource: res, Namespace: ns,
				Revisions: int64(s.revs), Tombstones: int64(s.tombs), Bytes: int64(s.bytes), Deleted: !s.exists()})
		}
	} else if !a.o.File {
		for _, it := range a.most.sorted() {
			res, ns := a.names(it.key)
			kr := KeyRevisions{Key: it.key, Resource: res, Namespace: ns, Revisions: it.more[0], Bytes: it.more[2]}
			if it.score != kr.Revisions {
				kr.RevisionsMax = it.score
			}
			r.MostRevisions = append(r.MostRevisions, kr)
		}
	}
	r.LargestKeys, r.MostRevisions = nonNil(r.LargestKeys), nonNil(r.MostRevisions)
	r.Classes = nonNil(r.Classes)
	r.Estimates = Estimates{PurgeGhosts: r.Ghosts, Compaction: historyOf(r.Total)}
	return r
}

// names are the resource and namespace of key, as a report says them.
func (a *Account) names(key string) (res, ns string) {
	rb, nb, outside := split(a.o.Prefix, []byte(key))
	if outside {
		return OutsidePrefix, ""
	}
	return string(rb), string(nb)
}

// historyOf is u's history alone.
func historyOf(u Usage) Usage {
	return Usage{HistoryRevisions: u.HistoryRevisions, Tombstones: u.Tombstones, HistoryBytes: u.HistoryBytes,
		HistoryRevisionsMax: u.HistoryRevisionsMax, HistoryBytesMax: u.HistoryBytesMax}
}

// mergeWalk adds the history the walk counted to the values counted now.
func mergeWalk(now, history *tally) *tally {
	out := newTally(now.prefix)
	merge := func(cur, hist Usage) Usage {
		return Usage{Keys: cur.Keys, Bytes: cur.Bytes, HistoryRevisions: hist.HistoryRevisions, Tombstones: hist.Tombstones, HistoryBytes: hist.HistoryBytes}
	}
	groupsOf := func(cur, hist groups, into groups) {
		for name, c := range cur {
			g := &Group{Name: name, Usage: c.Usage, Ghost: c.Ghost}
			into[name] = g
		}
		for name, h := range hist {
			g := into[name]
			if g == nil {
				g = &Group{Name: name}
				into[name] = g
			}
			g.Usage = merge(g.Usage, h.Usage)
		}
	}
	groupsOf(now.resources, history.resources, out.resources)
	groupsOf(now.namespaces, history.namespaces, out.namespaces)
	out.total = merge(now.total, history.total)
	out.outside = merge(now.outside, history.outside)
	return out
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
