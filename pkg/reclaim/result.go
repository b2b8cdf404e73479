package reclaim

import (
	"github.com/regghost/regghost/pkg/backup"
)

// Result is what Run did.
type Result struct {
	// Plan is the survey Run started from.
	Plan *Plan `json:"plan"`
	// Dir is the backup directory that holds the snapshot.
	Dir              string               `json:"dir,omitempty"`
	Snapshot         *backup.SnapshotInfo `json:"snapshot,omitempty"`
	SnapshotEndpoint string               `json:"snapshotEndpoint,omitempty"`
	Compaction       *Compaction          `json:"compaction,omitempty"`
	// Members are the members in the order they were defragmented, then
	// those that were not.
	Members []MemberResult `json:"members"`
	// Stop says where and why Run stopped before the end; nil when it
	// went through.
	Stop *Stop `json:"stop,omitempty"`
	// Disarm says what became of the NOSPACE alarm; nil when Run stopped
	// before.
	Disarm *Disarm `json:"disarm,omitempty"`
	// Warnings are what a person must know about the run (no etcd lock).
	Warnings []string `json:"warnings,omitempty"`
}

// Compaction is the compaction Run did.
type Compaction struct {
	Revision int64 `json:"revision"`
	// Already says the keyspace was compacted at or past the revision
	// already (kube-apiserver compacts every 5 minutes).
	Already bool `json:"already,omitempty"`
}

// Outcomes of a member.
const (
	Defragmented = "defragmented"
	Failed       = "failed"
	NotReached   = "not-reached"
	Skipped      = "skipped"
)

// MemberResult is what became of one member.
type MemberResult struct {
	Name     string `json:"name"`
	ID       string `json:"id"`
	Endpoint string `json:"endpoint"`
	// Leader says the member led the cluster when it was defragmented
	// (for a member not reached: when Run stopped).
	Leader  bool   `json:"leader"`
	Learner bool   `json:"learner,omitempty"`
	Outcome string `json:"outcome"`
	Why     string `json:"why,omitempty"`
	// Before and After are the db size, and InUse its part in use, before
	// and after the defragmentation.
	Before      int64   `json:"before"`
	BeforeInUse int64   `json:"beforeInUse"`
	After       int64   `json:"after,omitempty"`
	AfterInUse  int64   `json:"afterInUse,omitempty"`
	Seconds     float64 `json:"seconds,omitempty"`
	Quota       Quota   `json:"quota"`
}

// Stop is where Run stopped and what it had done.
type Stop struct {
	// Member is the member Run stopped at ("" when it stopped before the
	// first defragmentation).
	Member string `json:"member,omitempty"`
	Why    string `json:"why"`
	// Done and NotDone name the members defragmented and not.
	Done    []string `json:"done"`
	NotDone []string `json:"notDone"`
}

// Disarm is what became of the NOSPACE alarm.
type Disarm struct {
	// Alarms are the NOSPACE alarms found after the defragmentations.
	Alarms []Alarm `json:"alarms"`
	// Disarmed says they were disarmed, and are gone from the alarm list.
	Disarmed bool `json:"disarmed"`
	// Why says why they were left.
	Why string `json:"why,omitempty"`
	// Over are members at or over their quota; Near those above 80% of it.
	Over []string `json:"over,omitempty"`
	Near []string `json:"near,omitempty"`
}

// Kinds of step.
const (
	StepSnapshot      = "snapshot"
	StepCompacted     = "compacted"
	StepDefragmenting = "defragmenting"
	StepDefragmented  = "defragmented"
	StepStopped       = "stopped"
	StepDisarm        = "disarm"
)

// Step is one step of a run as it happens, for progress.
type Step struct {
	Kind string
	// Result is the run so far.
	Result *Result
	// Member is the member of a defragmenting or defragmented step.
	Member *MemberResult
}
