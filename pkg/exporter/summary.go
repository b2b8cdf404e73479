// Package exporter turns scan reports into Prometheus metrics: counts of
// ghosts, suspects, dangling references and terminating namespaces, which
// checks could be made, and what each scan cycle cost. It keeps label
// cardinality bounded: no object names, and namespaces beyond a limit share
// the label value "other". Every label value that comes from etcd (a
// namespace, a resource, a kind, a class) is made valid by textsafe.Escape
// before it is counted: one name that is not UTF-8 would otherwise fail
// every scrape.
package exporter

import (
	"fmt"
	"maps"
	"sort"
	"time"

	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/textsafe"
)

// OtherNamespace is the namespace label of every namespace beyond the limit.
const OtherNamespace = "other"

// DefaultNamespaceLimit is how many namespaces get a label value of their own.
const DefaultNamespaceLimit = 100

// ObjectKey labels one regghost_objects series.
type ObjectKey struct {
	Class     etcdscan.Class
	Resource  string
	Namespace string
}

// DanglingKey labels one regghost_dangling_references series.
type DanglingKey struct {
	// Kind is the referring object's kind (APIService, ValidatingWebhookConfiguration...).
	Kind            string
	State           etcdscan.DanglingState
	TargetNamespace string
}

// CheckState is whether one check of a scan could be made.
type CheckState struct {
	Name string
	Done bool
}

// Snapshot is what one scan found, as counts: the values every series of a
// cycle is built from. A new snapshot replaces the last one whole, so a
// purged ghost's series disappears.
type Snapshot struct {
	// Objects counts findings by their most severe class (each object once).
	Objects map[ObjectKey]int
	// Classes counts findings under every class they carry.
	Classes map[ObjectKey]int
	// Ghosts and SingleWitness count ghosts per namespace, and the ghosts
	// only one witness stands behind.
	Ghosts        map[string]int
	SingleWitness map[string]int
	Dangling      map[DanglingKey]int
	// DanglingSince is when the oldest reference of each series is known
	// to have dangled from (references with no date are left out).
	DanglingSince map[DanglingKey]time.Time
	// Terminating is each terminating namespace's age in seconds (the
	// oldest for the other bucket), and TerminatingObjects the keys left in it.
	Terminating        map[string]float64
	TerminatingObjects map[string]int
	// Checks are the scan's checks, in the report's order.
	Checks []CheckState
	// APIWitness is set when the API server was a witness of the scan.
	APIWitness   bool
	KeysScanned  int
	InternalKeys int
	Revision     int64
	// Stored counts objects per resource and stored version (or
	// "encrypted <provider>/<key>" not decrypted here, "undecodable").
	Stored map[StoredKey]int
	// Keys counts objects per resource and encryption provider and key,
	// and says whether that key writes the resource now.
	Keys map[KeyKey]int
}

// StoredKey is a series of regghost_stored_objects.
type StoredKey struct{ Resource, StoredAs string }

// KeyKey is a series of regghost_encryption_objects: Writes is "true",
// "false", or "unknown" without the encryption configuration.
type KeyKey struct{ Resource, Key, Writes string }

// Summarize counts a report. Namespaces are ranked by how much they hold
// (findings, dangling references pointing into them, terminating) and only
// the first limit keep their name; the rest are counted as "other". A limit
// of 0 or less keeps no name. Every text of the report that becomes a label
// is escaped (textsafe.Escape) here, where the counts are keyed: two names
// that escape alike are summed into one series, never exported twice.
func Summarize(rep *etcdscan.Report, limit int) (*Snapshot, error) {
	s := &Snapshot{
		Objects: map[ObjectKey]int{}, Classes: map[ObjectKey]int{},
		Ghosts: map[string]int{}, SingleWitness: map[string]int{},
		Dangling: map[DanglingKey]int{}, DanglingSince: map[DanglingKey]time.Time{}, Terminating: map[string]float64{}, TerminatingObjects: map[string]int{},
		APIWitness: rep.APIWitness, KeysScanned: rep.ScannedKeys, InternalKeys: rep.InternalKeys, Revision: rep.Revision,
	}
	// The findings are read once (a spilled report reads them from disk),
	// counted by namespace name; the names become labels once every
	// namespace's weight is known.
	weight := map[string]int{}
	err := rep.Each(func(f *etcdscan.Finding) error {
		n := f.Namespace
		if n != "" {
			weight[n]++
		}
		if len(f.Classes) == 0 {
			return nil
		}
		resource := textsafe.Escape(f.Resource)
		s.Objects[ObjectKey{Class: escapeClass(f.Classes[0]), Resource: resource, Namespace: n}]++
		for _, c := range f.Classes {
			s.Classes[ObjectKey{Class: escapeClass(c), Resource: resource, Namespace: n}]++
		}
		if f.Ghost {
			s.Ghosts[n]++
			if f.SingleWitness {
				s.SingleWitness[n]++
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read findings: %w", err)
	}
	ns := namespaceLabels(rep, weight, limit)
	labelled := func(k ObjectKey) ObjectKey { k.Namespace = ns(k.Namespace); return k }
	s.Objects, s.Classes = relabel(s.Objects, labelled), relabel(s.Classes, labelled)
	s.Ghosts, s.SingleWitness = relabel(s.Ghosts, ns), relabel(s.SingleWitness, ns)
	for _, d := range rep.Dangling {
		k := DanglingKey{Kind: textsafe.Escape(d.Kind), State: etcdscan.DanglingState(textsafe.Escape(string(d.State))), TargetNamespace: ns(d.TargetNamespace)}
		s.Dangling[k]++
		if d.Since != nil {
			if old, ok := s.DanglingSince[k]; !ok || d.Since.Before(old) {
				s.DanglingSince[k] = *d.Since
			}
		}
	}
	for _, t := range rep.Terminating {
		n := ns(t.Name)
		s.Terminating[n] = max(s.Terminating[n], t.Since.Seconds())
		s.TerminatingObjects[n] += t.Objects
	}
	for _, c := range rep.Checks {
		s.Checks = append(s.Checks, CheckState{Name: textsafe.Escape(c.Name), Done: c.Done})
	}
	s.Stored, s.Keys = map[StoredKey]int{}, map[KeyKey]int{}
	for _, v := range rep.Versions {
		r := textsafe.Escape(v.Resource)
		for at, n := range v.Stored {
			s.Stored[StoredKey{Resource: r, StoredAs: textsafe.Escape(at)}] += n
		}
		for k, n := range boundKeyIDs(v, maxKeyIDs) {
			s.Keys[KeyKey{Resource: r, Key: textsafe.Escape(k), Writes: v.Writes(k)}] += n
		}
	}
	return s, nil
}

// maxKeyIDs bounds the series of one KMS v2 plugin's key IDs per resource:
// a KMS that rotates on a schedule, never migrated, adds one a rotation.
const maxKeyIDs = 5

// boundKeyIDs is v.Keys with at most limit key IDs of each KMS v2 plugin:
// the one the plugin writes with and an unreadable envelope's are kept,
// then those holding the most objects; the rest are summed under
// "<plugin> (other key IDs)", a key that does not write.
func boundKeyIDs(v etcdscan.StoredVersions, limit int) map[string]int {
	byPlugin := map[string][]string{}
	for k := range v.Keys {
		if etcdscan.KeyIDOf(k) != "" {
			byPlugin[etcdscan.Plugin(k)] = append(byPlugin[etcdscan.Plugin(k)], k)
		}
	}
	out := maps.Clone(v.Keys)
	for plugin, ids := range byPlugin {
		if len(ids) <= limit {
			continue
		}
		first := func(k string) bool {
			id := etcdscan.KeyIDOf(k)
			return id == etcdscan.UnreadableKeyID || (plugin == v.Writer && id == v.WriterKeyID)
		}
		sort.Slice(ids, func(i, j int) bool {
			if first(ids[i]) != first(ids[j]) {
				return first(ids[i])
			}
			if v.Keys[ids[i]] != v.Keys[ids[j]] {
				return v.Keys[ids[i]] > v.Keys[ids[j]]
			}
			return ids[i] < ids[j]
		})
		for _, k := range ids[limit-1:] {
			out[etcdscan.OtherKeyIDs(plugin)] += out[k]
			delete(out, k)
		}
	}
	return out
}

// escapeClass is a class as a label value.
func escapeClass(c etcdscan.Class) etcdscan.Class { return etcdscan.Class(textsafe.Escape(string(c))) }

// relabel sums the counts of m under the keys label gives.
func relabel[K comparable](m map[K]int, label func(K) K) map[K]int {
	out := make(map[K]int, len(m))
	for k, n := range m {
		out[label(k)] += n
	}
	return out
}

// namespaceLabels returns the label value of each namespace: its name for
// the limit namespaces holding the most (escaped), "other" for the rest.
// The empty namespace (cluster-scoped objects) is always itself. weight
// holds the findings of each namespace.
func namespaceLabels(rep *etcdscan.Report, weight map[string]int, limit int) func(string) string {
	for _, d := range rep.Dangling {
		if d.TargetNamespace != "" {
			weight[d.TargetNamespace]++
		}
	}
	for _, t := range rep.Terminating {
		weight[t.Name]++
	}
	return rankedLabels(weight, limit)
}

// rankedLabels returns the label value of each namespace: its name
// (escaped) for the limit namespaces of the most weight, the first by name
// among equals, "other" for the rest; the empty namespace (cluster-scoped)
// is always itself.
func rankedLabels(weight map[string]int, limit int) func(string) string {
	names := make([]string, 0, len(weight))
	for n := range weight {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		if weight[names[i]] != weight[names[j]] {
			return weight[names[i]] > weight[names[j]]
		}
		return names[i] < names[j]
	})
	keep := map[string]bool{}
	for i := 0; i < len(names) && i < limit; i++ {
		keep[names[i]] = true
	}
	return func(n string) string {
		if n == "" || keep[n] {
			return textsafe.Escape(n)
		}
		return OtherNamespace
	}
}
