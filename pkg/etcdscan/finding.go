package etcdscan

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"time"

	"github.com/regghost/regghost/pkg/usage"
)

// Class is a kind of ghost or suspect.
type Class string

// The classes, most severe first. The first five are ghosts: Kubernetes cannot
// manage the object any more. The rest are suspects worth a human look.
const (
	ClassUndecodable       Class = "undecodable"
	ClassEncryptedUnknown  Class = "encrypted-unknown"
	ClassUnservedType      Class = "unserved-type"
	ClassOrphanedNamespace Class = "orphaned-namespace"
	ClassKeyMismatch       Class = "key-mismatch"
	// ClassDisputed is a ghost verdict one witness made and the other
	// contradicted: both answers are in its reason.
	ClassDisputed Class = "disputed"
	// ClassUnservedNow is an object whose type exists (a CRD in etcd, or a
	// resource compiled into kube-apiserver) but is not served right now.
	ClassUnservedNow Class = "unserved-now"
	// ClassStoredVersion is an object stored at a version nobody can read
	// any more (or soon): recoverable, with the fix in its reason.
	ClassStoredVersion Class = "stored-version"
	// ClassResurrected is an object that survived an earlier namespace of
	// the same name (or was created since by such an object): it came back
	// to life when the namespace was created again.
	ClassResurrected      Class = "resurrected"
	ClassStuckTerminating Class = "stuck-terminating"
	ClassDanglingOwner    Class = "dangling-owner"
)

// Classes lists every class in order of severity.
var Classes = []Class{ClassUndecodable, ClassEncryptedUnknown, ClassUnservedType, ClassOrphanedNamespace, ClassKeyMismatch,
	ClassDisputed, ClassUnservedNow, ClassStoredVersion, ClassResurrected, ClassStuckTerminating, ClassDanglingOwner}

// Ghost reports whether the class marks an object Kubernetes cannot manage.
func (c Class) Ghost() bool { return c.rank() < ClassDisputed.rank() }

func (c Class) rank() int {
	for i, x := range Classes {
		if x == c {
			return i
		}
	}
	return len(Classes)
}

// Meaning says in one line what each class means, for help texts.
var Meaning = map[Class]string{
	ClassUndecodable:       "the value is neither valid protobuf, JSON nor CBOR",
	ClassEncryptedUnknown:  "encrypted at rest and the API server cannot read it",
	ClassUnservedType:      "no served resource stores under the key's prefix (CRD gone, API removed)",
	ClassOrphanedNamespace: "the object's namespace key does not exist",
	ClassKeyMismatch:       "the key's namespace/name/kind disagrees with the object inside",
	ClassDisputed:          "etcd says ghost, the API server contradicts it",
	ClassUnservedNow:       "the type exists (CRD in etcd, compiled-in API) but is not served now",
	ClassStoredVersion:     "stored at a version nobody can read any more (or soon): 'regghost stored-versions' says the fix",
	ClassResurrected:       "survived an earlier namespace of the same name, or was created since by such an object",
	ClassStuckTerminating:  "deleted, but finalizers still present after --terminating-after",
	ClassDanglingOwner:     "every ownerReference points at an object that is gone",
}

// Forceable lists the classes purge's --force-class takes: the suspects,
// but disputed (etcd and the API server disagree: settle that first).
func Forceable() []Class {
	var out []Class
	for _, c := range Classes {
		if !c.Ghost() && c != ClassDisputed {
			out = append(out, c)
		}
	}
	return out
}

// ForceableNames joins Forceable for a help text.
func ForceableNames() string {
	var names []string
	for _, c := range Forceable() {
		names = append(names, string(c))
	}
	return strings.Join(names, ", ")
}

// ParseForceable reads one --force-class word.
func ParseForceable(s string) (Class, error) {
	c, ok := ParseClass(s)
	switch {
	case !ok:
		return "", fmt.Errorf("%q is not a class (one of %s)", s, ForceableNames())
	case c.Ghost():
		return "", fmt.Errorf("%s is a ghost class: ghosts are purged without --force-class, which only admits suspects (%s)", s, ForceableNames())
	case c == ClassDisputed:
		return "", fmt.Errorf("%s: etcd and the API server disagree about these objects; settle the disagreement (the reason says both answers) before deleting anything", s)
	}
	return c, nil
}

// ParseForceables reads --force-class's words; a word that is no
// forceable class is a usage error.
func ParseForceables(words []string) ([]Class, error) {
	var out []Class
	for _, w := range words {
		c, err := ParseForceable(w)
		if err != nil {
			return nil, usage.Errorf("--force-class: %w", err)
		}
		out = append(out, c)
	}
	return out, nil
}

// ParseClass checks a class name given on the command line.
func ParseClass(s string) (Class, bool) {
	for _, c := range Classes {
		if string(c) == s {
			return c, true
		}
	}
	return "", false
}

// Finding is one key that is a ghost or a suspect.
type Finding struct {
	// unreadCreated says why the creation time of an encrypted value could
	// not be read, for the resurrected verdict.
	unreadCreated string
	Key           string `json:"key"`
	Resource      string `json:"resource"`
	APIVersion    string `json:"apiVersion,omitempty"`
	Kind          string `json:"kind,omitempty"`
	Namespace     string `json:"namespace,omitempty"`
	Name          string `json:"name"`
	// Classes holds every class that applies, most severe first.
	Classes []Class `json:"classes"`
	// Reasons holds one sentence per class, in the same order.
	Reasons []string `json:"reasons"`
	// Ghost is set when a ghost class stands and no witness contradicts it.
	Ghost bool `json:"ghost"`
	// SingleWitness marks a ghost no ghost class of which was confirmed by
	// a second witness (the API server could not be asked, or its answer
	// was no evidence). purge refuses these unless told otherwise.
	SingleWitness bool `json:"singleWitness,omitempty"`
	// Evidence lists every witness asked about each class and its answer.
	Evidence []Evidence `json:"evidence,omitempty"`
	// Absent lists the keys whose absence a ghost verdict rests on (the
	// namespace key, the CRD key): purge deletes only while they stay absent.
	Absent         []string   `json:"absent,omitempty"`
	UID            string     `json:"uid,omitempty"`
	Format         string     `json:"format,omitempty"`
	Encryption     string     `json:"encryption,omitempty"`
	CreateRevision int64      `json:"createRevision"`
	ModRevision    int64      `json:"modRevision"`
	Created        *time.Time `json:"created,omitempty"`
}

// Has reports whether the finding carries class c.
func (f *Finding) Has(c Class) bool {
	for _, x := range f.Classes {
		if x == c {
			return true
		}
	}
	return false
}

// add records a class with its reason, keeping classes in severity order.
func (f *Finding) add(c Class, reason string) {
	if f.Has(c) {
		return
	}
	f.Classes = append(f.Classes, c)
	f.Reasons = append(f.Reasons, reason)
	sort.Sort(byRank{f})
}

// Reason joins the reasons into one line.
func (f *Finding) Reason() string { return strings.Join(f.Reasons, "; ") }

type byRank struct{ f *Finding }

func (b byRank) Len() int           { return len(b.f.Classes) }
func (b byRank) Less(i, j int) bool { return b.f.Classes[i].rank() < b.f.Classes[j].rank() }
func (b byRank) Swap(i, j int) {
	b.f.Classes[i], b.f.Classes[j] = b.f.Classes[j], b.f.Classes[i]
	b.f.Reasons[i], b.f.Reasons[j] = b.f.Reasons[j], b.f.Reasons[i]
}

// Check records whether one kind of check could be made.
type Check struct {
	Name string `json:"name"`
	Done bool   `json:"done"`
	Note string `json:"note,omitempty"`
}

// Report is the result of one scan.
type Report struct {
	// Revision is the etcd revision every read was made at.
	Revision  int64  `json:"revision"`
	Prefix    string `json:"prefix"`
	Namespace string `json:"namespace,omitempty"`
	// Catalog says where the list of served resources came from.
	Catalog      string         `json:"catalog"`
	ScannedKeys  int            `json:"scannedKeys"`
	InternalKeys int            `json:"internalKeys"`
	Encrypted    map[string]int `json:"encrypted,omitempty"`
	// Decrypted counts encrypted values decrypted with --encryption-provider-config.
	Decrypted int       `json:"decrypted,omitempty"`
	Checks    []Check   `json:"checks"`
	Findings  []Finding `json:"findings"`
	// Summary counts findings by their most severe class.
	Summary map[Class]int `json:"summary"`
	// Versions is the census of stored versions, per resource.
	Versions []StoredVersions `json:"versions,omitempty"`
	// APIWitness is set when the API server was a witness of this scan (it
	// answered and fronts this etcd).
	APIWitness bool `json:"apiWitness"`
	// Dangling are the references of live objects into what is gone (or
	// down), found by pkg/dangling.
	Dangling []DanglingRef `json:"dangling"`
	// DanglingByDesign are references kube-apiserver's own bootstrap
	// policy holds to ServiceAccounts that exist only while the component
	// using them runs: shown where detail is asked for (-o wide, json),
	// never counted and never fixed.
	DanglingByDesign []DanglingRef `json:"danglingByDesign,omitempty"`
	// Terminating lists every namespace in Terminating at the scan's
	// revision, stuck or not yet, with how long it has been.
	Terminating []TerminatingNamespace `json:"terminating,omitempty"`
	// Leases counts what keeps etcd's keys alive, by class (pkg/leases
	// judges and names them; `regghost leases` lists and removes them):
	// nil when the scan did not audit them.
	Leases map[string]int `json:"leases,omitempty"`
	// spilled holds the findings, spilledN of them, when they were too
	// many to keep in memory; Findings is nil then.
	spilled  *findingStore
	spilledN int
	closed   bool
}

// TerminatingNamespace is a namespace whose deletion has started.
type TerminatingNamespace struct {
	Name string `json:"name"`
	// Since is how long ago its deletion started.
	Since time.Duration `json:"since"`
	// Finalizers are what still holds it ("spec:kubernetes" for spec.finalizers).
	Finalizers []string `json:"finalizers,omitempty"`
	// Objects counts the keys still stored in it.
	Objects int `json:"objects"`
}

// Ghosts returns the number of findings that are ghosts.
func (r *Report) Ghosts() int {
	n := 0
	if r.spilled != nil {
		// A finding is a ghost when its most severe class is one.
		for _, c := range Classes {
			if c.Ghost() {
				n += r.Summary[c]
			}
		}
		return n
	}
	for _, f := range r.Findings {
		if f.Ghost {
			n++
		}
	}
	return n
}

// take makes the findings of st the report's: sorted in memory, ghosts
// first, or left in the spill file, which Each reads in the same order.
func (r *Report) take(st *findingStore) {
	if !st.spilled() {
		r.Findings = st.mem
		sort.SliceStable(r.Findings, func(i, j int) bool {
			a, b := r.Findings[i], r.Findings[j]
			if a.Ghost != b.Ghost {
				return a.Ghost
			}
			return a.Key < b.Key
		})
		return
	}
	r.Findings, r.spilled, r.spilledN = nil, st, st.n
}

// Each calls fn with every finding, ghosts first, each group in key order.
// A report with more findings than a scan keeps in memory reads them from
// its spill file, one at a time: what fn is given is valid only during
// the call.
func (r *Report) Each(fn func(*Finding) error) error {
	if r.closed {
		return errors.New("the report's findings were read after it was closed")
	}
	if r.spilled == nil {
		for i := range r.Findings {
			if err := fn(&r.Findings[i]); err != nil {
				return err
			}
		}
		return nil
	}
	return r.spilled.read(fn)
}

// Len is the number of findings.
func (r *Report) Len() int {
	if r.spilled != nil {
		return r.spilledN
	}
	return len(r.Findings)
}

// Spilled reports whether the findings are in a spill file rather than in
// Findings (read them with Each).
func (r *Report) Spilled() bool { return r.spilled != nil }

// Close releases the spill file of a report with many findings. Each
// fails after it, and MarshalJSON of a spilled report (Len, Ghosts and
// Summary still answer).
func (r *Report) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	return r.spilled.close()
}

// Header is the report without its findings: what a writer of many
// findings prints around them.
func (r *Report) Header() Report {
	h := *r
	h.Findings, h.spilled, h.spilledN = nil, nil, 0
	return h
}

// MarshalJSON writes the report with every finding, read back from the
// spill file when there is one (into memory: -o json streams them instead).
func (r *Report) MarshalJSON() ([]byte, error) {
	type plain Report
	if r.spilled == nil {
		return json.Marshal((*plain)(r))
	}
	if r.closed {
		return nil, errors.New("the report's findings were written out after it was closed")
	}
	all := Report(r.Header())
	all.Findings = make([]Finding, 0, r.spilledN)
	if err := r.Each(func(f *Finding) error { all.Findings = append(all.Findings, *f); return nil }); err != nil {
		return nil, err
	}
	return json.Marshal((*plain)(&all))
}
