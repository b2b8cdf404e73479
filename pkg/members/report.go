package members

import (
	"fmt"
	"strings"

	"github.com/regghost/regghost/pkg/etcdmembers"
	"github.com/regghost/regghost/pkg/plural"
)

// Kinds of difference one member's copy of a key shows against the
// majority's copy.
const (
	// Missing: the majority holds the key, the member does not.
	Missing = "missing"
	// Extra: the member holds a key the majority does not.
	Extra = "extra"
	// ValueDiffers: both hold the key with other values.
	ValueDiffers = "value"
	// RevisionDiffers: both hold the same value, written at other
	// revisions (create or mod revision, version or lease differ).
	RevisionDiffers = "revision"
	// NoMajority: no state of the key is held by more than half of the
	// members compared; each member's state is listed.
	NoMajority = "no-majority"
)

// How the keys were compared.
const (
	// ModeRevision compares every member's keyspace at one shared
	// revision: values and create and mod revisions, version and lease.
	ModeRevision = "revision"
	// ModeCurrent compares the current values, each member read at its
	// own current revision: presence and value only.
	ModeCurrent = "current"
	// ModeNone: the keys were not compared one by one.
	ModeNone = "none"
)

// What a verdict rests on.
const (
	// BasisHash: the members' HashKV at one shared revision.
	BasisHash = "hash"
	// BasisKeys: the copies of the keys each member holds.
	BasisKeys = "keys"
	// BasisLeases: the leases each member holds.
	BasisLeases = "leases"
	// BasisMembership: the member list each member holds.
	BasisMembership = "membership"
)

// Report is what the members say of their data and how they differ.
type Report struct {
	// ClusterID is the etcd cluster's ID, in hex.
	ClusterID string `json:"clusterID,omitempty"`
	// Members are every member of the member list, by name.
	Members []Member `json:"members"`
	// ClusterAlarms are the alarms raised on member 0: etcd's corruption
	// check raises CORRUPT there when it cannot tell which member is wrong.
	ClusterAlarms []string `json:"clusterAlarms,omitempty"`
	// Samples are the hash samples, in the order taken: one when every
	// hash agreed the first time, else two, Interval apart.
	Samples []Sample `json:"samples"`
	// Interval is the time between the two samples, in seconds.
	Interval float64 `json:"intervalSeconds"`
	// Keys is the key-by-key comparison.
	Keys KeyComparison `json:"keys"`
	// Leases compares the leases each member holds.
	Leases LeaseComparison `json:"leases"`
	// Membership compares each member's own member list.
	Membership MembershipComparison `json:"membership"`
	// Verdict says whether the members agree, and which is wrong.
	Verdict Verdict `json:"verdict"`
	// NotCompared says what is not compared, and why.
	NotCompared []string `json:"notCompared"`
	// Notes say what else the person should know.
	Notes []string `json:"notes,omitempty"`
}

// Member is one member's evidence, from its last status read.
type Member struct {
	etcdmembers.Member
	// CompactRevision is the revision it last compacted at (0: never).
	CompactRevision int64 `json:"compactRevision"`
	// Alarms are the alarms raised on it (CORRUPT, NOSPACE).
	Alarms []string `json:"alarms,omitempty"`
	// Behind says how far it trails the others when it is behind: it is
	// then not compared, and never named wrong.
	Behind *Lag `json:"behind,omitempty"`
}

// Lag is how far a member trails the others.
type Lag struct {
	// Entries are the raft entries the member furthest along applied
	// that it has not.
	Entries uint64 `json:"entries"`
	// Revisions is how far its revision trails the highest.
	Revisions int64 `json:"revisions"`
	// BelowCompaction is set when its revision is below another member's
	// compacted revision: no revision is then held by every member.
	BelowCompaction bool `json:"belowCompaction,omitempty"`
	// Waited is how long it was given to catch up, in seconds.
	Waited float64 `json:"waitedSeconds"`
	// NoAnswer, when set, says why its last read (its Status, or a read of
	// its revision) was not answered in the member timeout: the lag is as
	// it last answered.
	NoAnswer string `json:"noAnswer,omitempty"`
}

// Sample is one round of HashKV on every member at one shared revision.
type Sample struct {
	// Kind is HashFull (the lowest current revision of the members, which
	// every member holds) or HashCompaction (the newest revision every
	// member compacted at, whose hash etcd kept from the compaction).
	Kind string `json:"kind"`
	// Revision is the revision hashed.
	Revision int64 `json:"revision"`
	// Members are each member's status and hash at this sample.
	Members []MemberSample `json:"members"`
	// Comparable says the hashes can be compared: they cover the same
	// history (the same compacted revision); Why says why not.
	Comparable bool   `json:"comparable"`
	Why        string `json:"why,omitempty"`
	// Groups are the members grouped by hash, the largest group first.
	Groups [][]string `json:"groups"`
	// noShared says why no revision is held by every member ("": one is).
	noShared string
}

// MemberSample is one member's status and hash in one sample.
type MemberSample struct {
	Member          string `json:"member"`
	Revision        int64  `json:"revision"`
	AppliedIndex    uint64 `json:"appliedIndex"`
	CompactRevision int64  `json:"compactRevision"`
	// Hash is its HashKV at the sample's revision, 8 hex digits ("" when
	// it was not read: Error says why).
	Hash  string `json:"hash,omitempty"`
	Error string `json:"error,omitempty"`
	// Computed is set, in a compaction sample, when the member held no
	// hash of that compaction and computed it (a scan of its keyspace):
	// its hash then covers another history than a kept one.
	Computed bool `json:"computed,omitempty"`
}

// KeyComparison is the key-by-key comparison of the members' keyspaces.
type KeyComparison struct {
	// Mode is ModeRevision, ModeCurrent or ModeNone; Why says why.
	Mode string `json:"mode"`
	Why  string `json:"why,omitempty"`
	// Revision is the shared revision read in ModeRevision.
	Revision int64 `json:"revision,omitempty"`
	// Reads are what was read of each member.
	Reads []MemberRead `json:"reads,omitempty"`
	// Distinct is how many keys were seen on any member; Differ how many
	// of them differ between members.
	Distinct int64 `json:"distinct"`
	Differ   int64 `json:"differ"`
	// Settled counts keys that differed when first read (ModeCurrent) but
	// agreed when read again: writes in flight.
	Settled int64 `json:"settled,omitempty"`
	// NotRechecked counts differing keys beyond the limit of those read
	// again (ModeCurrent): some may be writes in flight.
	NotRechecked int64 `json:"notRechecked,omitempty"`
	// Groups are the differences by member and kind, the largest first.
	Groups []Group `json:"groups"`
	// Keys are the differing keys one by one, in key order, at most
	// Options.MaxKeys of them; Unlisted counts the others.
	Keys     []KeyDiff `json:"keys"`
	Unlisted int64     `json:"unlisted,omitempty"`
}

// MemberRead is what was read of one member's keyspace.
type MemberRead struct {
	Member string `json:"member"`
	// Revision is the revision it was read at.
	Revision int64 `json:"revision"`
	Keys     int64 `json:"keys"`
}

// Group is the keys that differ one way on one member.
type Group struct {
	// Member is the member; "" for keys with no majority.
	Member string `json:"member,omitempty"`
	// Difference is Missing, Extra, ValueDiffers, RevisionDiffers or
	// NoMajority.
	Difference string `json:"difference"`
	Keys       int64  `json:"keys"`
	// FirstRevision and LastRevision bound the mod revisions of the
	// writes concerned: the majority's copy for Missing, ValueDiffers and
	// RevisionDiffers, the member's own for Extra, any for NoMajority.
	FirstRevision int64 `json:"firstRevision"`
	LastRevision  int64 `json:"lastRevision"`
	// Resources count the keys by storage prefix ("pods",
	// "(outside the prefix)"), the most first.
	Resources []Count `json:"resources"`
}

// Count is a number of keys of one resource.
type Count struct {
	Resource string `json:"resource"`
	Keys     int64  `json:"keys"`
}

// KeyDiff is one key that differs between members.
type KeyDiff struct {
	Key string `json:"key"`
	// Resource, Namespace and Name are what the key's path says (empty
	// outside the registry prefix).
	Resource  string `json:"resource,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	// APIVersion and Kind are decoded from the value (the majority's copy
	// where there is one); Encrypted says the value is encrypted at rest;
	// DecodeError says why it could not be decoded.
	APIVersion  string `json:"apiVersion,omitempty"`
	Kind        string `json:"kind,omitempty"`
	Encrypted   bool   `json:"encrypted,omitempty"`
	DecodeError string `json:"decodeError,omitempty"`
	// Majority are the members holding the majority's state of the key
	// (none: no majority).
	Majority []string `json:"majority"`
	// States are each compared member's copy.
	States []KeyState `json:"states"`
}

// KeyState is one member's copy of a key.
type KeyState struct {
	Member  string `json:"member"`
	Present bool   `json:"present"`
	// SHA256 is the value's SHA-256, in hex; Size its length.
	SHA256         string `json:"sha256,omitempty"`
	Size           int    `json:"size,omitempty"`
	CreateRevision int64  `json:"createRevision,omitempty"`
	ModRevision    int64  `json:"modRevision,omitempty"`
	Version        int64  `json:"version,omitempty"`
	Lease          int64  `json:"lease,omitempty"`
	// Difference is how it differs from the majority's copy ("": it is
	// the majority's).
	Difference string `json:"difference,omitempty"`
}

// LeaseComparison compares the leases each member holds.
type LeaseComparison struct {
	Compared bool `json:"compared"`
	// Counts are how many leases each member holds.
	Counts []MemberCount `json:"counts,omitempty"`
	// Differ are the leases not held by every member, in both reads.
	Differ []LeaseDiff `json:"differ,omitempty"`
	// Error says why they were not compared.
	Error string `json:"error,omitempty"`
}

// MemberCount is a number held by one member.
type MemberCount struct {
	Member string `json:"member"`
	Count  int    `json:"count"`
}

// LeaseDiff is a lease some members hold and others do not.
type LeaseDiff struct {
	// ID is the lease's ID in hex, as etcdctl prints it.
	ID      string   `json:"id"`
	Holders []string `json:"holders"`
}

// MembershipComparison compares each member's own member list.
type MembershipComparison struct {
	Compared bool `json:"compared"`
	// Views are the member lists the members hold, each with the members
	// holding it, the most held first.
	Views []MembershipView `json:"views,omitempty"`
	Error string           `json:"error,omitempty"`
	// Moved is set when the lists differed at the first read and split
	// the members another way at the second: a change in flight, not a
	// difference.
	Moved bool `json:"moved,omitempty"`
}

// MembershipView is one member list and the members that hold it.
type MembershipView struct {
	HeldBy []string `json:"heldBy"`
	// List is one line a member: name, ID, peer URLs, learner.
	List []string `json:"list"`
}

// Verdict says whether the members agree and which member is wrong.
type Verdict struct {
	// Agree is set when every member compared agrees on everything
	// compared.
	Agree bool `json:"agree"`
	// Basis is what the verdict rests on: BasisHash, BasisKeys,
	// BasisLeases or BasisMembership ("" when they agree).
	Basis string `json:"basis,omitempty"`
	// Majority are the members that agree with each other and make a
	// quorum of the cluster; Wrong the members compared outside it.
	Majority []string `json:"majority,omitempty"`
	Wrong    []string `json:"wrong,omitempty"`
	// Refused says why no member is named wrong although they differ.
	Refused string `json:"refused,omitempty"`
	// Reason says in words what the verdict rests on.
	Reason string `json:"reason"`
	// Unknown is set when too little could be compared to tell whether
	// the members agree; Refused says why.
	Unknown bool `json:"unknown,omitempty"`
	// NotCompared are the members that could not be read: they do not
	// answer.
	NotCompared []string `json:"notCompared,omitempty"`
	// Behind are the members that trail the others (Member.Behind says
	// how far): not compared, and never named wrong.
	Behind []string `json:"behind,omitempty"`
}

// Differ reports whether the members were found to differ.
func (r *Report) Differ() bool { return !r.Verdict.Agree && !r.Verdict.Unknown }

// Incomplete reports whether some member could not be compared: it does
// not answer, or it is behind.
func (r *Report) Incomplete() bool {
	return len(r.Verdict.NotCompared) > 0 || len(r.Verdict.Behind) > 0
}

// Unsure is why the comparison is not a verdict: it could not tell whether
// the members agree, or they agree but a member was not compared (it did
// not answer, or it is behind). Nil when the members differ (a verdict,
// whoever was left out) or all of them agree.
func (r *Report) Unsure() error {
	v := r.Verdict
	switch {
	case v.Unknown:
		return fmt.Errorf("could not tell whether the members agree: %s", v.Refused)
	case r.Differ():
		return nil
	case len(v.NotCompared) > 0:
		return fmt.Errorf("%s did not answer and %s not compared", strings.Join(v.NotCompared, ", "), plural.Pick(len(v.NotCompared), "was", "were"))
	case len(v.Behind) > 0:
		return fmt.Errorf("%s %s behind and %s not compared: compare again once caught up", strings.Join(v.Behind, ", "),
			plural.Be(len(v.Behind)), plural.Pick(len(v.Behind), "was", "were"))
	}
	return nil
}
