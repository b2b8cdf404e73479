package members

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/regghost/regghost/pkg/nodeconfig"
)

// Replacing a wrong member is etcd's own recovery for a member whose data
// is wrong, or that is gone (its data corruption and runtime
// reconfiguration guides): remove it, add it back, start it on an empty
// data directory with --initial-cluster-state=existing, so that it copies
// the leader's data. Replace does the parts etcd's API does, guarded, and
// says what to run on the member's node for the rest. Its plan (survey)
// and its run (runSteps) walk the same steps, named as the plan prints
// them:
//
//  1. evidence: every member that answers saves and verifies its snapshot
//     (the wrong member's own data among it);
//  2. leadership: when the leader is not of the majority, it moves to the
//     majority member furthest along (a new member copies from the
//     leader, etcd#8313);
//  3. check: right before the removal, every other voting member answers,
//     healthy (no NOSPACE, not behind);
//  4. remove: the member is removed, through the other members' client
//     URLs (a member stops as it applies its own removal);
//  5. add: it is added back as a learner at its peer URLs;
//  6. node: on its node, its etcd is stopped, its data directory moved
//     aside (never deleted) and started again on an empty one with
//     --initial-cluster-state=existing;
//  7. promote: the learner is promoted once etcd says it has caught up;
//  8. compare: the members are compared again until they agree;
//  9. disarm: CORRUPT is disarmed.
//
// Before the first write the plan budgets every byte the run writes on
// this machine, by filesystem (a device): the evidence, and on the
// member's own node the learner's copy and log beside the directories
// moved aside, which stay; it is refused unless each filesystem keeps its
// reserve (Disk). From the removal to the promotion the cluster runs with
// one voter fewer: the plan says what fault tolerance is left (Window). A run that
// stops before the promotion (the learner has not started within Wait) is
// taken up by the next, from replace.json beside the evidence, which also
// names the other members' client URLs: the next run reaches the cluster
// through them when the member's own node names only its own etcd.
//
// Each step is bounded by StepTimeout (--command-timeout), and the
// comparison after the promotion reads every member's keyspace again, as
// the one before it did: the plan says how long that takes at the pace
// (Timing) and is refused when it would not fit, before the first write,
// so that the replacement never runs out of time once the member is out.
// The writers' lock is held on an etcd lease from the evidence to the
// end: when it is lost (the lease expired: etcd unreachable from here, or
// this process paused, for over its TTL), the run stops at once, in the
// wait for the learner too, and says where the replacement stands and how
// to take it up (ErrLockLost).

// ReplaceOptions say which member to replace and how.
type ReplaceOptions struct {
	// Compare says how to reach and compare the members.
	Compare Options
	// Member is the wrong member's name.
	Member string
	// EvidenceRoot is the directory each member's snapshot is saved under
	// (the backup directory).
	EvidenceRoot string
	// Confirm acts; without it Replace only plans.
	Confirm bool
	// Shown is the plan the operator was shown and confirmed (a run
	// without Confirm): a confirmed run whose plan, surveyed again under
	// the locks, differs is refused. nil: none was shown.
	Shown *Replacement
	// Wait bounds the wait for the learner to start, catch up and agree.
	Wait time.Duration
	// Poll is the time between two tries (DefaultPoll when 0).
	Poll time.Duration
	// StepTimeout bounds each step but the wait for the learner: a
	// snapshot, a comparison (DefaultStepTimeout when 0).
	StepTimeout time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Node is the etcd member this node's files describe (nil: none
	// found): when it is the member replaced, the node steps name its
	// own directories (moving what a mount point holds, not the mount
	// point), and the disk budget counts the copy it takes.
	Node *nodeconfig.EtcdMember
	// Again is the command that takes this replacement up, as the
	// operator runs it (with the --backup-dir the record is under):
	// every way out that says to run it again names it. Empty:
	// "regghost members replace MEMBER --confirm".
	Again string
}

// Defaults of ReplaceOptions.
const (
	// DefaultPoll is how often a learner's promotion is tried.
	DefaultPoll = 2 * time.Second
	// DefaultStepTimeout bounds a step.
	DefaultStepTimeout = 5 * time.Minute
)

func (o *ReplaceOptions) poll() time.Duration {
	if o.Poll > 0 {
		return o.Poll
	}
	return DefaultPoll
}

func (o *ReplaceOptions) stepTimeout() time.Duration {
	if o.StepTimeout > 0 {
		return o.StepTimeout
	}
	return DefaultStepTimeout
}

// again is the command that takes the replacement up.
func (o *ReplaceOptions) again() string {
	if o.Again != "" {
		return o.Again
	}
	return "regghost members replace " + o.Member + " --confirm"
}

// ReplaceStage is how far a replacement got.
type ReplaceStage string

// The stages of a replacement.
const (
	// StagePlanned: a dry run; nothing was changed.
	StagePlanned ReplaceStage = "planned"
	// StageWaiting: the member was removed and added back as a learner,
	// which has not started or caught up yet.
	StageWaiting ReplaceStage = "waiting-for-the-learner"
	// StageReplaced: the learner was promoted and every member agrees.
	StageReplaced ReplaceStage = "replaced"
	// StageDiffers: the learner was promoted, and the members still
	// differ at the end of the wait.
	StageDiffers ReplaceStage = "promoted-still-differs"
)

// Evidence is one member's snapshot, saved before anything is changed.
type Evidence struct {
	Member   string `json:"member"`
	Path     string `json:"path"`
	Revision int64  `json:"revision"`
	Size     int64  `json:"size"`
	SHA256   string `json:"sha256"`
}

// Window is what the cluster can survive from the removal to the
// promotion: it runs with one voter fewer.
type Window struct {
	// Voters is how many voting members are left; Quorum how many of them
	// must answer; Tolerates how many may fail before the cluster stops.
	Voters    int `json:"voters"`
	Quorum    int `json:"quorum"`
	Tolerates int `json:"tolerates"`
	// Words say it, with what the operator must do in it.
	Words []string `json:"words"`
}

// Replacement is what Replace did, or would do.
type Replacement struct {
	// Cluster is the etcd cluster's ID, in hex.
	Cluster  string       `json:"cluster,omitempty"`
	Member   string       `json:"member"`
	ID       string       `json:"id,omitempty"`
	PeerURLs []string     `json:"peerURLs"`
	Stage    ReplaceStage `json:"stage"`
	// Why says why the member is replaced: named wrong, or not
	// answering while the others agree.
	Why string `json:"why,omitempty"`
	// Steps are the steps, in words, in order: done or to do.
	Steps []string `json:"steps"`
	// Window is what the cluster survives while the member is out.
	Window *Window `json:"window,omitempty"`
	// Timing is how long a comparison of the members takes against the
	// time each step has: the one after the promotion reads as many keys
	// as the one that planned.
	Timing *Timing `json:"timing,omitempty"`
	// Disk is every byte the replacement writes on this machine, by
	// filesystem, against what each has free, planned before the first
	// write: the evidence, and on the member's own node the learner's
	// copy beside the directories moved aside.
	Disk []DiskBudget `json:"disk,omitempty"`
	// Dir holds the evidence and replace.json.
	Dir      string     `json:"dir,omitempty"`
	Evidence []Evidence `json:"evidence,omitempty"`
	// MovedLeaderFrom and MovedLeaderTo say where the leadership moved.
	MovedLeaderFrom string `json:"movedLeaderFrom,omitempty"`
	MovedLeaderTo   string `json:"movedLeaderTo,omitempty"`
	// LearnerID is the ID of the member added back.
	LearnerID string `json:"learnerID,omitempty"`
	// OnNode is what to run on the member's node.
	OnNode []string `json:"onNode,omitempty"`
	// Before is the comparison that named the member; After the one made
	// once it was promoted.
	Before *Report `json:"before,omitempty"`
	After  *Report `json:"after,omitempty"`
	// Disarmed are the alarms disarmed at the end.
	Disarmed []string `json:"disarmed,omitempty"`
	// Notes say what else the operator should know.
	Notes []string `json:"notes,omitempty"`
	// Again is the command that takes the replacement up when it is not
	// done yet.
	Again string `json:"again,omitempty"`
}

// ErrRefused is returned (wrapped) when Replace will not act; nothing was
// changed.
var ErrRefused = errors.New("refused")

// ErrLearnerWaiting is returned (wrapped) when the learner did not start
// or catch up within the wait: run Replace again once it runs.
var ErrLearnerWaiting = errors.New("the learner has not caught up yet")

// ErrStoppedMidway is returned (wrapped) when a stop (Ctrl-C, SIGTERM)
// ended a replacement after the member was removed: not done yet, and the
// next run takes it up where it stopped.
var ErrStoppedMidway = errors.New("stopped part way")

// ErrLockLost is returned (wrapped) when regghost's writers' lock was
// lost while held (its etcd lease expired): the run stopped at once, and
// its error says where the replacement stands and how to take it up.
var ErrLockLost = errors.New("regghost's etcd lock was lost")

// Replace replaces o.Member, or plans it (see the steps above). Without
// o.Confirm nothing is changed on any path, a replacement taken up again
// included.
func Replace(ctx context.Context, o ReplaceOptions) (*Replacement, error) {
	if o.Member == "" {
		return nil, fmt.Errorf("%w: name the member to replace", ErrRefused)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	r, err := startReplace(ctx, o)
	if err != nil {
		return nil, err
	}
	defer r.close()
	p, err := r.survey(ctx)
	if p != nil {
		p.res.Again = o.again()
	}
	switch {
	case p == nil:
		return nil, err
	case err != nil:
		return p.res, err
	case !o.Confirm:
		p.res.Stage = StagePlanned
		return p.res, nil
	case o.Shown != nil && (p.res.ID != o.Shown.ID || !slices.Equal(p.res.Steps, o.Shown.Steps)):
		// What was confirmed is the plan shown: one surveyed again under
		// the locks that differs (a leadership moved, a member down or up,
		// a record taken up) was never confirmed.
		return p.res, fmt.Errorf("%w: the plan changed since it was shown (now: %s); nothing was changed: run again to see it", ErrRefused, strings.Join(p.res.Steps, "; "))
	}
	return r.runSteps(ctx, p)
}
