package space

import (
	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/dbfile"
	"github.com/regghost/regghost/pkg/etcdmembers"
	"github.com/regghost/regghost/pkg/leases"
)

// Report is where the bytes of an etcd keyspace are. Bytes are counted as
// a key's length plus its value's: what etcd keeps of each revision,
// without bbolt's and etcd's own overhead (a few tens of bytes a revision,
// which the members' sizes in use include).
type Report struct {
	// Source is "etcd" or the db file read.
	Source string `json:"source"`
	// File is the db file read, nil live.
	File *dbfile.Info `json:"file,omitempty"`
	// Prefix is the registry prefix the values are grouped under.
	Prefix string `json:"prefix"`
	// Revision is the revision every value was read at.
	Revision int64 `json:"revision"`
	// CompactRevision is where the history held begins (0: never
	// compacted, or not known: see Notes).
	CompactRevision int64 `json:"compactRevision"`
	// ExactHistory is set when every revision held was counted (a db
	// file); live, the history is bounded from each key's version: the
	// Max fields hold the upper bounds.
	ExactHistory bool `json:"exactHistory"`
	// Total is every key; Outside the keys outside Prefix.
	Total   Usage `json:"total"`
	Outside Usage `json:"outside"`
	// Resources and Namespaces are ranked by bytes (values and history),
	// largest first. Keys outside Prefix are the resource OutsidePrefix;
	// cluster-scoped keys are the namespace "" (not listed).
	Resources  []Group `json:"resources"`
	Namespaces []Group `json:"namespaces"`
	// Classes are the scan's findings by their most severe class.
	Classes []ClassGroup `json:"classes"`
	// Ghosts is every ghost together.
	Ghosts Usage `json:"ghosts"`
	// LargestKeys are the keys with the largest values now, largest first.
	LargestKeys []KeySize `json:"largestKeys"`
	// MostRevisions are the keys with the most revisions held, most first
	// (live: by the upper bound).
	MostRevisions []KeyRevisions `json:"mostRevisions"`
	// Members are etcd's members (live only).
	Members []Member `json:"members,omitempty"`
	// Alarms are the alarms raised (live only).
	Alarms []Alarm `json:"alarms,omitempty"`
	// Pages is the db file's page use (a db file only).
	Pages *Pages `json:"pages,omitempty"`
	// Leases are the keys and bytes the leases audit's classes hold
	// (events past their TTL, under no lease, leases over the limit); nil
	// when not audited.
	Leases []leases.Held `json:"leases,omitempty"`
	// Estimates say what a purge of the ghosts and a compaction would free.
	Estimates Estimates `json:"estimates"`
	// NotEtcd is set when the members are not etcd's (kine): no quota, no
	// alarm, no defragmentation.
	NotEtcd bool `json:"notEtcd,omitempty"`
	// Backups is what regghost's backups hold on their filesystem (live
	// only, when the backup directory is known).
	Backups *backup.Holdings `json:"backups,omitempty"`
	// Notes say what could not be read or counted, and why.
	Notes []string `json:"notes,omitempty"`
}

// OutsidePrefix is the resource of the keys outside the registry prefix
// (kube-apiserver's compact_rev_key, other clients' keys).
const OutsidePrefix = "(outside the prefix)"

// Usage is what a set of keys holds: their values now and their history.
type Usage struct {
	// Keys and Bytes are the keys that exist now and their bytes.
	Keys  int64 `json:"keys"`
	Bytes int64 `json:"bytes"`
	// HistoryRevisions counts the older revisions held (puts and
	// deletes), Tombstones the deletes among them, HistoryBytes their
	// bytes: what a compaction at the current revision drops. Live they
	// are lower bounds, and the Max fields the upper bounds.
	HistoryRevisions    int64 `json:"historyRevisions"`
	Tombstones          int64 `json:"tombstones"`
	HistoryBytes        int64 `json:"historyBytes"`
	HistoryRevisionsMax int64 `json:"historyRevisionsMax,omitempty"`
	HistoryBytesMax     int64 `json:"historyBytesMax,omitempty"`
	// DeletedKeys counts keys that no longer exist but whose revisions
	// are held (a db file only).
	DeletedKeys int64 `json:"deletedKeys,omitempty"`
}

// AllBytes is the values and the history (its upper bound live).
func (u Usage) AllBytes() int64 { return u.Bytes + max(u.HistoryBytes, u.HistoryBytesMax) }

func (u *Usage) add(o Usage) {
	u.Keys += o.Keys
	u.Bytes += o.Bytes
	u.HistoryRevisions += o.HistoryRevisions
	u.Tombstones += o.Tombstones
	u.HistoryBytes += o.HistoryBytes
	u.HistoryRevisionsMax += o.HistoryRevisionsMax
	u.HistoryBytesMax += o.HistoryBytesMax
	u.DeletedKeys += o.DeletedKeys
}

// Group is the usage of one resource or one namespace.
type Group struct {
	// Name is the storage prefix of a resource ("configmaps",
	// "example.com/widgets") or a namespace's name.
	Name string `json:"name"`
	Usage
	// Ghost is the part of it that ghosts hold.
	Ghost Usage `json:"ghost"`
}

// ClassGroup is the usage of the findings of one class.
type ClassGroup struct {
	Class string `json:"class"`
	// Ghost is set for the ghost classes (purge removes them).
	Ghost bool `json:"ghost"`
	Usage
	// Namespaces names the namespaces holding most of it, largest first.
	Namespaces []string `json:"namespaces,omitempty"`
}

// KeySize is one key and its value's size.
type KeySize struct {
	Key       string `json:"key"`
	Resource  string `json:"resource"`
	Namespace string `json:"namespace,omitempty"`
	Bytes     int64  `json:"bytes"`
}

// KeyRevisions is one key and the revisions held of it.
type KeyRevisions struct {
	Key       string `json:"key"`
	Resource  string `json:"resource"`
	Namespace string `json:"namespace,omitempty"`
	// Revisions counts every revision held, the current one included;
	// RevisionsMax is its upper bound live.
	Revisions    int64 `json:"revisions"`
	RevisionsMax int64 `json:"revisionsMax,omitempty"`
	Tombstones   int64 `json:"tombstones,omitempty"`
	Bytes        int64 `json:"bytes"`
	// Deleted is set when the key does not exist now.
	Deleted bool `json:"deleted,omitempty"`
}

// Member is one etcd member's database.
type Member struct {
	etcdmembers.Member
	// Fragmented is the part of the db file not in use: free pages a
	// defragmentation gives back.
	Fragmented int64 `json:"fragmented"`
	// Quota is --quota-backend-bytes; QuotaSource says where it was read.
	Quota       int64  `json:"quota,omitempty"`
	QuotaSource string `json:"quotaSource,omitempty"`
}

// FragmentedShare is the fragmented part of the db file, 0 to 1.
func (m Member) FragmentedShare() float64 {
	if m.DBSize <= 0 {
		return 0
	}
	return float64(m.Fragmented) / float64(m.DBSize)
}

// QuotaUse is the db file's size against the quota, 0 to 1 and beyond
// (0 when the quota is unknown). etcd raises NOSPACE on the file's size,
// fragmented pages included.
func (m Member) QuotaUse() float64 {
	if m.Quota <= 0 {
		return 0
	}
	return float64(m.DBSize) / float64(m.Quota)
}

// Alarm is one alarm raised on a member.
type Alarm = etcdmembers.Alarm

// Pages is a db file's use of its pages, as bbolt holds them.
type Pages struct {
	PageSize int64 `json:"pageSize"`
	// FileSize is the file's size; InUse the pages reachable from its
	// buckets (and its meta and freelist pages); Fragmented the rest:
	// what a defragmentation gives back.
	FileSize   int64 `json:"fileSize"`
	InUse      int64 `json:"inUse"`
	Fragmented int64 `json:"fragmented"`
}

// Estimates say what each step frees, before anything is done. Bytes
// freed are given back to the disk (and taken off the quota) only by a
// defragmentation after the compaction.
type Estimates struct {
	// PurgeGhosts is what a purge of every ghost, then a compaction at a
	// revision after it, would free: the ghosts' values and their history.
	PurgeGhosts Usage `json:"purgeGhosts"`
	// Compaction is what a compaction at the current revision would free:
	// every older revision and tombstone held.
	Compaction Usage `json:"compaction"`
	// Defragmentation is the fragmented bytes of the largest member (or
	// of the file) now, before any compaction.
	Defragmentation int64 `json:"defragmentation"`
}
