package etcdscan

import "time"

// DanglingState says whether what a reference points at is gone, down, or a
// ghost.
type DanglingState string

const (
	// DanglingGone: the Service (or account, or claim) a live object points
	// at does not exist: its own key is missing and the API server does not
	// find it (a GET of it answers 404). A namespace's absence alone never
	// makes it gone. Only gone is a dangling reference.
	DanglingGone DanglingState = "gone"
	// DanglingDown: the Service exists with no ready endpoint. Nothing is
	// offered but bringing it back.
	DanglingDown DanglingState = "down"
	// DanglingGhost: the target is stored (and the API server serves it)
	// but its namespace is gone: it is a ghost. dangling fixes nothing; the
	// purge that removes the ghost namespace is its fix.
	DanglingGhost DanglingState = "ghost"
)

// DanglingRef is a field of a live object that points into something the
// incident took away: an APIService or webhook at a Service that is gone, a
// binding's ServiceAccount subject in a namespace that is gone, a
// PersistentVolume's claimRef to a claim that is gone (pkg/dangling finds
// them).
type DanglingRef struct {
	// Key, Kind, Namespace and Name are the referring object's.
	Key       string `json:"key"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// ModRevision is the referring key's: a fix is preconditioned on it.
	ModRevision int64 `json:"modRevision"`
	// Field is where the reference is ("spec.service",
	// "webhooks[hook.example.com].clientConfig.service", "subjects[0]").
	Field string `json:"field"`
	// Target is what it points at ("service kb-system/webhook").
	Target string `json:"target"`
	// TargetNamespace is the namespace it points into.
	TargetNamespace string        `json:"targetNamespace"`
	State           DanglingState `json:"state"`
	// Why says what is missing, as each witness saw it.
	Why string `json:"why"`
	// Consequence says what breaks, in one line.
	Consequence string `json:"consequence"`
	// Fix says what regghost would do about it (or what to do).
	Fix string `json:"fix"`
	// SingleWitness is set when the API server could not confirm it.
	SingleWitness bool `json:"singleWitness,omitempty"`
	// Entries is how many webhooks (of a webhook configuration) or subjects
	// (of a binding) the referring object holds: a fix deletes it whole
	// only when each of them is a gone reference the fix takes. Zero when
	// the object holds no such list, or it is not known.
	Entries int `json:"entries,omitempty"`
	// ManagedBy names who would re-create or adopt the referring object
	// (Helm, Argo CD, Flux), from its labels and annotations.
	ManagedBy []string `json:"managedBy,omitempty"`
	// KeepObject is set when a fix may edit the referring object but never
	// delete it (a binding of kube-apiserver's bootstrap policy, which it
	// re-creates at its next start).
	KeepObject bool `json:"keepObject,omitempty"`
	// Since is when it is known to have dangled from: the time an
	// APIService's Available condition turned False. serve sets it to when
	// it first saw the reference when the object does not say.
	Since *time.Time `json:"since,omitempty"`
}

// DanglingGoneCount counts the references whose target is gone.
func (r *Report) DanglingGoneCount() int {
	n := 0
	for _, d := range r.Dangling {
		if d.State == DanglingGone {
			n++
		}
	}
	return n
}
