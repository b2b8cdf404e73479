package etcdwrite

// Outcome is what happened to one key or object a command meant to change.
// Every outcome any write command reports is defined here, once.
type Outcome string

// Outcomes of deletes, restores, recoveries and fixes through the API server.
const (
	Deleted        Outcome = "deleted"
	SkippedChanged Outcome = "skipped-changed"
	SkippedGone    Outcome = "skipped-gone"
	StillPresent   Outcome = "still-present"
	Restored       Outcome = "restored"
	AlreadyPresent Outcome = "already-present"
	Conflict       Outcome = "conflict"
	WouldRestore   Outcome = "would-restore"
	WouldDelete    Outcome = "would-delete"
	// NotAttempted is a key left alone because the run stopped before it.
	NotAttempted Outcome = "not-attempted"
	// RestoredWithoutVolume is a claim written back whose volume is gone.
	RestoredWithoutVolume Outcome = "restored-without-volume"
	// LeftAsIs is a backup entry restore does not write back by design.
	LeftAsIs Outcome = "left-as-is"
	// Refused is a key not written because a key its verdict rests on
	// (its namespace, its CRD) says it must not be.
	Refused Outcome = "refused"
	// Unverified is a key written whose read-back failed.
	Unverified Outcome = "unverified"
	// Recovered is a key a recovery created.
	Recovered Outcome = "recovered"
	// Retained is a PersistentVolume set to reclaim policy Retain before its
	// claim was deleted.
	Retained Outcome = "retained"
	// NotRetained is a PersistentVolume left as it was because its claim
	// was not deleted.
	NotRetained Outcome = "not-retained"
	// Rewritten is an object rewritten through the API server (a webhook
	// entry or a binding subject removed).
	Rewritten Outcome = "rewritten"
	// FixFailed is a fix the API server refused.
	FixFailed Outcome = "fix-failed"
	// FinalizersRemoved is an object whose blocking finalizers were removed.
	FinalizersRemoved Outcome = "finalizers-removed"
	// TargetNotGone is a fix left alone because what one of its references
	// points at is no longer gone when read again right before the write.
	TargetNotGone Outcome = "target-not-gone"
	// PatchFailed is a finalizer patch the API server refused.
	PatchFailed Outcome = "patch-failed"
)

// Result is the outcome for one key, with a sentence for humans.
type Result struct {
	Key     string  `json:"key"`
	Outcome Outcome `json:"outcome"`
	Detail  string  `json:"detail,omitempty"`
	// Revision is the revision the key was written at, where the write
	// created or changed it (a recovery's keys: what its undo compares).
	Revision int64 `json:"revision,omitempty"`
}
