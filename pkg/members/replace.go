package members

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/diskroom"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/snapshot"
)

// Replacing a wrong member is etcd's own recovery for a member whose data
// is wrong (its data corruption guide): remove it, add it back, start it
// on an empty data directory with --initial-cluster-state=existing, so
// that it copies the leader's data. Replace does the parts etcd's API
// does, guarded, and says what to run on the member's node for the rest:
//
//  1. a comparison (Compare) names the member wrong, by a quorum of the
//     members, and every other member answers;
//  2. every member's snapshot is saved and verified first: the evidence,
//     the wrong member's own data among it;
//  3. when the member leads, the leadership moves to the majority member
//     furthest along: the new member copies from the leader (etcd#8313);
//  4. the member is removed and added back as a learner at its peer URLs
//     (it takes no part in the quorum until it has caught up);
//  5. on its node: stop its etcd, move its data directory aside (never
//     delete it), start it with --initial-cluster-state=existing;
//  6. the learner is promoted once etcd says it has caught up, the members
//     are compared again until every key and hash agrees, and CORRUPT is
//     disarmed.
//
// A run that stops at step 5 (the learner has not started within Wait) is
// taken up again by the next: the learner at the member's peer URLs is
// the state, and the evidence directory records the peer URLs.

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
	// Wait bounds the wait for the learner to start, catch up and agree.
	Wait time.Duration
	// Poll is the time between two tries (DefaultPoll when 0).
	Poll time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// DefaultPoll is how often a learner's promotion is tried.
const DefaultPoll = 2 * time.Second

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

// Replacement is what Replace did, or would do.
type Replacement struct {
	// Cluster is the etcd cluster's ID, in hex.
	Cluster  string       `json:"cluster,omitempty"`
	Member   string       `json:"member"`
	ID       string       `json:"id,omitempty"`
	PeerURLs []string     `json:"peerURLs"`
	Stage    ReplaceStage `json:"stage"`
	// Steps are the steps, in words, in order: done or to do.
	Steps []string `json:"steps"`
	// Dir holds the evidence and replace.json.
	Dir      string     `json:"dir,omitempty"`
	Evidence []Evidence `json:"evidence,omitempty"`
	// MovedLeaderTo is the member the leadership moved to.
	MovedLeaderTo string `json:"movedLeaderTo,omitempty"`
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
}

// ErrRefused is returned (wrapped) when Replace will not act; nothing was
// changed.
var ErrRefused = errors.New("refused")

// ErrLearnerWaiting is returned (wrapped) when the learner did not start
// or catch up within the wait: run Replace again once it runs.
var ErrLearnerWaiting = errors.New("the learner has not caught up yet")

// recordFile is where the peer URLs of a member removed for replacement
// are kept, beside its evidence.
const recordFile = "replace.json"

// Replace replaces o.Member, or plans it (see the package's steps).
// Without o.Confirm nothing is changed on any path, a replacement taken up
// again included.
func Replace(ctx context.Context, o ReplaceOptions) (*Replacement, error) {
	if o.Member == "" {
		return nil, fmt.Errorf("%w: name the member to replace", ErrRefused)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	cli := o.Compare.Client
	mctx, cancel := context.WithTimeout(ctx, o.Compare.timeout())
	resp, err := cli.MemberList(mctx)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("read etcd's member list: %w", err)
	}
	list, cluster := resp.Members, hexID(resp.Header.ClusterId)
	if o.Confirm {
		// The locks every regghost write holds, before anything is judged
		// for the change.
		unlock, err := lockWriters(ctx, o, cluster)
		if err != nil {
			return nil, fmt.Errorf("%w; nothing was changed", err)
		}
		defer unlock()
	}
	if dup := duplicateName(list); dup != "" {
		return nil, fmt.Errorf("%w: two members are named %q: name them apart first (members are told apart by name); nothing was changed", ErrRefused, dup)
	}
	res := &Replacement{Member: o.Member}
	target := findByName(list, o.Member)
	// Taken up again: the member is a learner at the peer URLs the newest
	// record of this cluster holds, or was removed and not added back.
	rec, dir, err := latestRecord(o.EvidenceRoot, o.Member, cluster)
	if err != nil {
		return nil, err
	}
	// The member added back has another ID than the one removed; a voter
	// there with a new ID was promoted by an earlier run whose answer was
	// lost: what is left is to compare and disarm.
	if rec != nil && (target == nil || (slices.Equal(target.PeerURLs, rec.PeerURLs) && hexID(target.ID) != rec.ID)) {
		res.PeerURLs, res.Dir, res.ID, res.Evidence, res.Cluster = rec.PeerURLs, dir, rec.ID, rec.Evidence, cluster
		if l := findByPeers(list, rec.PeerURLs); l != nil && (hexID(l.ID) == rec.ID || (l.Name != "" && l.Name != o.Member)) {
			return nil, fmt.Errorf("%w: member %q (%x) is at %s's peer URLs %s; nothing to take up", ErrRefused, orUnstarted(l.Name), l.ID, o.Member, strings.Join(rec.PeerURLs, ","))
		}
		res.Steps = []string{fmt.Sprintf("take up the replacement of %s that %s records (removed from etcd cluster %s)", o.Member, filepath.Join(dir, recordFile), cluster)}
		if findByPeers(list, rec.PeerURLs) == nil {
			res.Steps = append(res.Steps, fmt.Sprintf("add it back as a learner at %s", strings.Join(rec.PeerURLs, ",")))
		}
		res.Steps = append(res.Steps, "promote the learner once it has caught up with the leader",
			"compare the members again until every key and hash agrees; then disarm CORRUPT")
		res.OnNode = onNode(o.Member, res.PeerURLs, list)
		if !o.Confirm {
			res.Stage = StagePlanned
			return res, nil
		}
		return resume(ctx, o, res, list)
	}
	if target == nil {
		return nil, fmt.Errorf("%w: no member named %q in the member list (%s)", ErrRefused, o.Member, memberNames(list))
	}
	if target.IsLearner {
		return nil, fmt.Errorf("%w: %s is a learner that no replacement in %s added: promote it yourself once it has caught up (`etcdctl member promote %x`)", ErrRefused, o.Member, orDash(o.EvidenceRoot), target.ID)
	}
	for _, m := range list {
		if m.IsLearner {
			// etcd takes one learner by default (--max-learners): the
			// member removed could not be added back.
			return nil, fmt.Errorf("%w: %s is a learner (a member joining?): etcd takes one learner at a time, so %s could not be added back once removed; promote or remove it first; nothing was changed",
				ErrRefused, orUnstarted(m.Name), o.Member)
		}
	}
	res.ID, res.PeerURLs = hexID(target.ID), target.PeerURLs

	o.Compare.progress("comparing the members before anything is changed")
	before, err := Compare(ctx, o.Compare)
	if err != nil {
		return nil, err
	}
	res.Before = before
	if why := refuseReplace(before, o.Member, res.ID); why != "" {
		return res, fmt.Errorf("%w: %s; nothing was changed", ErrRefused, why)
	}
	// The learner copies from the leader: the leader must hold the
	// majority's copy.
	leader := slices.IndexFunc(before.Members, func(m Member) bool { return m.Leader })
	moveTo := ""
	if leader < 0 {
		return res, fmt.Errorf("%w: no member leads; nothing was changed", ErrRefused)
	}
	if l := before.Members[leader].Name; l == o.Member || !slices.Contains(before.Verdict.Majority, l) {
		moveTo = furthest(before, o.Member)
		if moveTo == "" {
			return res, fmt.Errorf("%w: %s leads and no member of the majority can take the leadership; nothing was changed", ErrRefused, l)
		}
	}
	res.Steps = planSteps(before, before.Members[leader].Name, moveTo, o.Member, res.PeerURLs)
	res.OnNode = onNode(o.Member, res.PeerURLs, list)
	if !o.Confirm {
		res.Stage = StagePlanned
		return res, nil
	}

	// 2. The evidence, where the disk can hold it with its reserve.
	var need uint64
	for _, m := range before.Members {
		need += uint64(m.DBSize) + 4096
	}
	need += need / 10
	if o.EvidenceRoot == "" {
		return res, fmt.Errorf("%w: no directory for the evidence: pass --backup-dir; nothing was changed", ErrRefused)
	}
	if err := os.MkdirAll(o.EvidenceRoot, 0o700); err != nil {
		return res, fmt.Errorf("create %s: %w; nothing was changed", o.EvidenceRoot, err)
	}
	if room, err := diskroom.Of(o.EvidenceRoot); err != nil {
		return res, err
	} else if !room.Fits(need) {
		return res, fmt.Errorf("%w: the members' snapshots need %d bytes in %s, which would leave less than its reserve free; nothing was changed", ErrRefused, need, o.EvidenceRoot)
	}
	dir, err = backup.NewBackupDir(o.EvidenceRoot, "members-replace-"+o.Member, o.Now())
	if err != nil {
		return res, err
	}
	res.Dir, res.Cluster = dir, cluster
	for _, m := range before.Members {
		if m.Learner || m.Endpoint == "" {
			continue
		}
		o.Compare.progress("saving %s's snapshot (evidence)", m.Name)
		cfg := o.Compare.Config
		cfg.Endpoints = []string{m.Endpoint}
		info, err := snapshot.SaveSnapshot(ctx, cfg, filepath.Join(dir, m.Name+".db"))
		if err != nil {
			return res, fmt.Errorf("save %s's snapshot: %w; nothing was changed", m.Name, err)
		}
		res.Evidence = append(res.Evidence, Evidence{Member: m.Name, Path: info.Path, Revision: info.Revision, Size: info.Size, SHA256: info.SHA256})
	}
	if err := writeRecord(dir, res, "removing"); err != nil {
		return res, fmt.Errorf("%w; nothing was changed", err)
	}

	// 3. The leadership.
	if moveTo != "" {
		from := before.Members[leader].Name
		o.Compare.progress("moving the leadership from %s to %s", from, moveTo)
		if err := moveLeader(ctx, o.Compare, before, from, moveTo); err != nil {
			_ = writeRecord(dir, res, "abandoned")
			return res, fmt.Errorf("move the leadership from %s to %s: %w; nothing else was changed", from, moveTo, err)
		}
		res.MovedLeaderTo = moveTo
	}

	// Right before the removal: every other voting member still answers
	// (the snapshots may have taken minutes).
	for _, m := range before.Members {
		if m.Name == o.Member || m.Learner {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, o.Compare.timeout())
		_, err := cli.Status(sctx, m.Endpoint)
		cancel()
		if err != nil {
			_ = writeRecord(dir, res, "abandoned")
			return res, fmt.Errorf("%w: %s does not answer now (%s): removing %s would leave the cluster without its fault tolerance; nothing else was changed",
				ErrRefused, m.Name, firstLine(err), o.Member)
		}
	}

	// 4. Remove it, add it back as a learner.
	o.Compare.progress("removing %s (%s) from the cluster", o.Member, res.ID)
	err = reconfigure(ctx, o.Compare, "remove "+o.Member, func(ctx context.Context) error {
		_, err := cli.MemberRemove(ctx, target.ID)
		if err != nil {
			// The member removed may answer before it stops, or stop
			// first ("server stopped"): what the member list says counts.
			if now, lerr := memberList(ctx, cli, o.Compare.timeout()); lerr == nil && findByName(now, o.Member) == nil && findByPeers(now, res.PeerURLs) == nil {
				return nil
			}
		}
		return err
	})
	if err != nil {
		if now, lerr := memberList(context.WithoutCancel(ctx), cli, o.Compare.timeout()); lerr == nil && findByName(now, o.Member) != nil {
			_ = writeRecord(dir, res, "abandoned")
			return res, fmt.Errorf("remove member %s: %w; it is still a member, nothing else was changed; the evidence is in %s", o.Member, err, dir)
		}
		return res, fmt.Errorf("remove member %s: %w; it may have been removed: run `regghost members replace %s --confirm` again to take it up; the evidence is in %s", o.Member, err, o.Member, dir)
	}
	list, err = memberList(ctx, cli, o.Compare.timeout())
	if err != nil {
		return res, fmt.Errorf("%w (after %s was removed: add it back with `etcdctl member add %s --learner --peer-urls=%s`)", err, o.Member, o.Member, strings.Join(res.PeerURLs, ","))
	}
	return resume(ctx, o, res, list)
}

// resume adds the member back as a learner where it is not one yet, says
// what to run on its node, and promotes it once it has caught up.
func resume(ctx context.Context, o ReplaceOptions, res *Replacement, list []*etcdserverpb.Member) (*Replacement, error) {
	// The client given may name the member removed, which stops: the
	// changes go through the other voting members' client URLs.
	cli := o.Compare.Client
	if others := othersClient(o.Compare, list, res.PeerURLs); others != nil {
		defer others.Close()
		cli = others
	}
	learner := findByPeers(list, res.PeerURLs)
	if learner == nil {
		o.Compare.progress("adding %s back as a learner at %s", o.Member, strings.Join(res.PeerURLs, ","))
		var resp *clientv3.MemberAddResponse
		err := reconfigure(ctx, o.Compare, "add "+o.Member+" back", func(ctx context.Context) error {
			var err error
			resp, err = cli.MemberAddAsLearner(ctx, res.PeerURLs)
			return err
		})
		if err != nil {
			return res, fmt.Errorf("add %s back as a learner: %w; it is removed: run `regghost members replace %s --confirm` again, or `etcdctl member add %s --learner --peer-urls=%s`",
				o.Member, err, o.Member, o.Member, strings.Join(res.PeerURLs, ","))
		}
		learner = resp.Member
		list = resp.Members
	}
	res.LearnerID = hexID(learner.ID)
	res.OnNode = onNode(o.Member, res.PeerURLs, list)
	if len(res.Steps) == 0 {
		res.Steps = []string{fmt.Sprintf("taken up again: %s is a learner (%s) at %s", o.Member, res.LearnerID, strings.Join(res.PeerURLs, ","))}
	}
	o.Compare.progress("%s is a learner (%s): on its node, %s", o.Member, res.LearnerID, strings.Join(res.OnNode, "; "))

	// 6. Promote once it has caught up.
	deadline := o.Now().Add(o.Wait)
	poll := o.Poll
	if poll <= 0 {
		poll = DefaultPoll
	}
	for {
		mctx, cancel := context.WithTimeout(ctx, o.Compare.timeout())
		_, err := cli.MemberPromote(mctx, learner.ID)
		cancel()
		if err == nil || errors.Is(rpctypes.Error(err), rpctypes.ErrMemberNotLearner) {
			// Promoted (by this try, or by one whose answer was lost).
			break
		}
		if !notReady(err) && !transient(err) {
			return res, fmt.Errorf("promote %s: %w", o.Member, err)
		}
		if !o.Now().Before(deadline) {
			res.Stage = StageWaiting
			return res, fmt.Errorf("%w: %s (%s) is a learner that has not started or caught up within %s; once its etcd runs on its node as said, run `regghost members replace %s --confirm` again",
				ErrLearnerWaiting, o.Member, res.LearnerID, o.Wait, o.Member)
		}
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(poll):
		}
	}
	o.Compare.progress("%s promoted; comparing the members again", o.Member)
	for {
		after, err := Compare(ctx, o.Compare)
		if err != nil {
			return res, fmt.Errorf("compare after the promotion: %w", err)
		}
		res.After = after
		if after.Verdict.Agree && len(after.Verdict.NotCompared) == 0 {
			break
		}
		if !o.Now().Before(deadline) {
			res.Stage = StageDiffers
			return res, fmt.Errorf("%s was promoted, and the members still differ: %s", o.Member, after.Verdict.Reason)
		}
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(poll):
		}
	}
	res.Stage = StageReplaced
	if res.Dir != "" {
		if err := writeRecord(res.Dir, res, "replaced"); err != nil {
			return res, fmt.Errorf("every member agrees, but: %w", err)
		}
	}
	disarmed, err := disarmCorrupt(ctx, cli, o.Compare.timeout())
	res.Disarmed = disarmed
	if err != nil {
		return res, fmt.Errorf("every member agrees, but disarming CORRUPT failed: %w (`etcdctl alarm disarm`)", err)
	}
	return res, nil
}

// lockWriters takes the locks every regghost write holds, as pkg/protect
// takes them: this node's (etcdwrite.NodeLock, named after the etcd
// cluster ID), then etcd's. Under an alarm (CORRUPT, NOSPACE) etcd refuses
// the etcd lock's writes: then this node's lock alone, once no regghost
// holds etcd's, and it says what that does not cover.
func lockWriters(ctx context.Context, o ReplaceOptions, cluster string) (func(), error) {
	what := "regghost members replace " + o.Member
	nodeUnlock, path, err := etcdwrite.NodeLock(cluster, what)
	if err != nil {
		return nil, err
	}
	etcdUnlock, err := etcdwrite.Lock(ctx, o.Compare.Client, what)
	if err == nil {
		return func() { etcdUnlock(); nodeUnlock() }, nil
	}
	if !etcdwrite.IsNoSpace(err) && !strings.Contains(err.Error(), "corrupt cluster") {
		nodeUnlock()
		return nil, err
	}
	if err := etcdwrite.RefuseEtcdHolder(ctx, o.Compare.Client); err != nil {
		nodeUnlock()
		return nil, err
	}
	o.Compare.progress("an alarm makes etcd refuse regghost's lock (%s): only this node's lock %s is held; it does not stop a regghost on another node", firstLine(err), path)
	return nodeUnlock, nil
}

// reconfigure runs a change of the member list, trying again for up to
// 30s while etcd refuses it for now: its strict reconfiguration check
// wants every member connected to the one asked for its health interval
// (5s), so a member that just started or just left makes it "unhealthy"
// for a moment; the member asked may be the one removed ("server
// stopped"); the client then moves to another endpoint.
func reconfigure(ctx context.Context, o Options, what string, fn func(context.Context) error) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		mctx, cancel := context.WithTimeout(ctx, o.timeout())
		err := fn(mctx)
		cancel()
		if err == nil {
			return nil
		}
		e := rpctypes.Error(err)
		again := errors.Is(e, rpctypes.ErrUnhealthy) || errors.Is(e, rpctypes.ErrMemberNotEnoughStarted) || transient(err)
		if !again || time.Now().After(deadline) {
			return err
		}
		o.progress("etcd refuses to %s for now (%s); trying again", what, firstLine(err))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// refuseReplace says why the comparison does not allow replacing member
// (whose ID is id), or "". Only a verdict on the hashes, or on the keys
// compared at one shared revision, is acted on: one on the leases or the
// member lists, or on current values (a member far behind), may name a
// member whose data is right.
func refuseReplace(r *Report, member, id string) string {
	v := r.Verdict
	switch {
	case v.Agree:
		return "the members agree: " + member + " is not wrong"
	case v.Unknown:
		return "too little could be compared to tell which member is wrong: " + v.Refused
	case len(v.Wrong) == 0:
		return "no member is named wrong (" + v.Refused + "): with no quorum agreeing, replacing one would copy data nobody can vouch for"
	case !slices.Contains(v.Wrong, member):
		return fmt.Sprintf("%s is not the wrong member: %s (%s)", member, strings.Join(v.Wrong, ", "), v.Reason)
	case v.Basis != BasisHash && !(v.Basis == BasisKeys && r.Keys.Mode == ModeRevision):
		return fmt.Sprintf("%s is named wrong on %s alone (%s): replace a member only on its hash, or its keys compared at one revision; run `regghost members` again once the cluster is quiet", member, orDash(v.Basis+" "+r.Keys.Mode), v.Reason)
	}
	for _, m := range r.Members {
		if m.Name == member && m.ID != id {
			return fmt.Sprintf("the member compared as %s has ID %s, the member list's %s has %s: it changed meanwhile", member, m.ID, member, id)
		}
	}
	for _, n := range v.NotCompared {
		if n != member {
			return n + " could not be compared: every member other than the one replaced must answer"
		}
	}
	// A member whose Status or HashKV failed in the last sample is in no
	// hash group: it must answer too.
	if n := len(r.Samples); n > 0 {
		for _, ms := range r.Samples[n-1].Members {
			if ms.Member != member && ms.Error != "" {
				return ms.Member + " did not answer the last hash sample (" + ms.Error + "): every member other than the one replaced must answer"
			}
		}
	}
	return ""
}

func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}

// duplicateName is a name two members share, or "".
func duplicateName(list []*etcdserverpb.Member) string {
	seen := map[string]bool{}
	for _, m := range list {
		if m.Name == "" {
			continue
		}
		if seen[m.Name] {
			return m.Name
		}
		seen[m.Name] = true
	}
	return ""
}

// furthest is the majority member with the highest applied index, to take
// the leadership from member.
func furthest(r *Report, member string) string {
	best, idx := "", uint64(0)
	for _, m := range r.Members {
		if m.Name != member && !m.Learner && slices.Contains(r.Verdict.Majority, m.Name) && m.Unreachable == "" && (best == "" || m.AppliedIndex > idx) {
			best, idx = m.Name, m.AppliedIndex
		}
	}
	return best
}

// moveLeader moves the leadership from member (which leads) to to,
// through a client on member's endpoint, and waits until to leads.
func moveLeader(ctx context.Context, o Options, r *Report, member, to string) error {
	from := r.Members[slices.IndexFunc(r.Members, func(m Member) bool { return m.Name == member })]
	dest := r.Members[slices.IndexFunc(r.Members, func(m Member) bool { return m.Name == to })]
	id, err := strconv.ParseUint(dest.ID, 16, 64)
	if err != nil {
		return fmt.Errorf("member %s's ID %q: %w", to, dest.ID, err)
	}
	cli, err := o.dial(from.Endpoint)
	if err != nil {
		return err
	}
	defer cli.Close()
	mctx, cancel := context.WithTimeout(ctx, o.timeout())
	_, err = cli.MoveLeader(mctx, id)
	cancel()
	if err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		sctx, cancel := context.WithTimeout(ctx, o.timeout())
		st, err := o.Client.Status(sctx, dest.Endpoint)
		cancel()
		if err == nil && st.Leader == id {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s does not lead 30s after the move", to)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// onNode is what to run on the member's node: etcd there must start again
// on an empty data directory, joining the cluster as it now is.
func onNode(member string, peers []string, list []*etcdserverpb.Member) []string {
	var initial []string
	for _, m := range list {
		name := m.Name
		if slices.Equal(m.PeerURLs, peers) {
			name = member
		}
		if name == "" {
			continue
		}
		for _, p := range m.PeerURLs {
			initial = append(initial, name+"="+p)
		}
	}
	slices.Sort(initial)
	return []string{
		"stop its etcd (kubeadm: move /etc/kubernetes/manifests/etcd.yaml out of the manifests directory and wait for the container to stop; systemd: systemctl stop etcd)",
		"move its data directory aside, never delete it (kubeadm: mv /var/lib/etcd /var/lib/etcd.wrong-" + member + "): it is the evidence of what it held",
		"start it again with the same --name " + member + " and URLs, an empty --data-dir, --initial-cluster-state=existing and --initial-cluster=" + strings.Join(initial, ",") +
			" (kubeadm: set those two flags in the manifest and move it back)",
	}
}

// planSteps are the steps Replace takes, in words.
func planSteps(r *Report, leader, moveTo, member string, peers []string) []string {
	var saved []string
	for _, m := range r.Members {
		if !m.Learner && m.Endpoint != "" {
			saved = append(saved, m.Name)
		}
	}
	steps := []string{fmt.Sprintf("save and verify the snapshot of every member (%s) as evidence", strings.Join(saved, ", "))}
	if moveTo != "" {
		steps = append(steps, fmt.Sprintf("move the leadership from %s to %s (a new member copies from the leader, which must hold the majority's copy)", leader, moveTo))
	}
	return append(steps,
		fmt.Sprintf("remove %s from the cluster", member),
		fmt.Sprintf("add it back as a learner at %s", strings.Join(peers, ",")),
		"on its node: stop its etcd, move its data directory aside, start it with --initial-cluster-state=existing (the commands are printed)",
		"promote the learner once it has caught up with the leader",
		"compare the members again until every key and hash agrees; then disarm CORRUPT")
}

// disarmCorrupt disarms every CORRUPT alarm.
func disarmCorrupt(ctx context.Context, cli *clientv3.Client, timeout time.Duration) ([]string, error) {
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := cli.AlarmList(actx)
	if err != nil {
		return nil, err
	}
	var done []string
	for _, a := range resp.Alarms {
		if a.Alarm != etcdserverpb.AlarmType_CORRUPT {
			continue
		}
		if _, err := cli.AlarmDisarm(actx, (*clientv3.AlarmMember)(a)); err != nil {
			return done, err
		}
		done = append(done, fmt.Sprintf("CORRUPT on %s", hexID(a.MemberID)))
	}
	return done, nil
}

// transient reports whether err is one a request sent again may not meet:
// the member asked stopped or lost its leader, or the connection broke.
func transient(err error) bool {
	e := rpctypes.Error(err)
	if errors.Is(e, rpctypes.ErrStopped) || errors.Is(e, rpctypes.ErrLeaderChanged) || errors.Is(e, rpctypes.ErrNoLeader) || errors.Is(e, rpctypes.ErrTimeout) {
		return true
	}
	if st, ok := status.FromError(err); ok && st.Code() == codes.Unavailable {
		return true
	}
	return errors.Is(err, context.DeadlineExceeded)
}

// othersClient is a client on the client URLs of the voting members other
// than the one at peers, or nil when there are none (then the client
// given serves).
func othersClient(o Options, list []*etcdserverpb.Member, peers []string) *clientv3.Client {
	var eps []string
	for _, m := range list {
		if m.IsLearner || slices.ContainsFunc(m.PeerURLs, func(p string) bool { return slices.Contains(peers, p) }) {
			continue
		}
		eps = append(eps, m.ClientURLs...)
	}
	if len(eps) == 0 {
		return nil
	}
	cfg := o.Config
	cfg.Endpoints = eps
	cli, err := clientv3.New(cfg)
	if err != nil {
		return nil
	}
	return cli
}

// notReady reports whether err is etcd's refusal to promote a learner
// that has not caught up (or not started).
func notReady(err error) bool {
	return errors.Is(rpctypes.Error(err), rpctypes.ErrMemberLearnerNotReady) || strings.Contains(err.Error(), "not in sync with leader")
}

func memberList(ctx context.Context, cli *clientv3.Client, timeout time.Duration) ([]*etcdserverpb.Member, error) {
	mctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := cli.MemberList(mctx)
	if err != nil {
		return nil, fmt.Errorf("read etcd's member list: %w", err)
	}
	return resp.Members, nil
}

func findByName(list []*etcdserverpb.Member, name string) *etcdserverpb.Member {
	for _, m := range list {
		if m.Name == name {
			return m
		}
	}
	return nil
}

func findByPeers(list []*etcdserverpb.Member, peers []string) *etcdserverpb.Member {
	for _, m := range list {
		for _, p := range m.PeerURLs {
			if slices.Contains(peers, p) {
				return m
			}
		}
	}
	return nil
}

func memberNames(list []*etcdserverpb.Member) string {
	var out []string
	for _, m := range list {
		out = append(out, orUnstarted(m.Name))
	}
	return strings.Join(out, ", ")
}

func hexID(id uint64) string { return strconv.FormatUint(id, 16) }

// replaceRecord is replace.json: what a later run needs to take a replacement up
// again once the member is removed.
type replaceRecord struct {
	// Stage is "removing" until the replacement ends, then "replaced": a
	// replaced member's record is never taken up again.
	Stage    string     `json:"stage"`
	Cluster  string     `json:"cluster"`
	Member   string     `json:"member"`
	ID       string     `json:"id"`
	PeerURLs []string   `json:"peerURLs"`
	Evidence []Evidence `json:"evidence"`
}

func writeRecord(dir string, res *Replacement, stage string) error {
	data, err := json.MarshalIndent(replaceRecord{Stage: stage, Cluster: res.Cluster, Member: res.Member, ID: res.ID, PeerURLs: res.PeerURLs, Evidence: res.Evidence}, "", "  ")
	if err != nil {
		return err
	}
	p := filepath.Join(dir, recordFile)
	if err := os.WriteFile(p, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	return backup.SyncDir(dir)
}

// latestRecord is the newest record under root of member in etcd cluster
// cluster, when it is a replacement still under way ("removing"): a newer
// record that ended (replaced, abandoned) or another cluster's never lets
// an older one be taken up. A damaged record of another member is skipped.
func latestRecord(root, member, cluster string) (*replaceRecord, string, error) {
	if root == "" {
		return nil, "", nil
	}
	paths, err := filepath.Glob(filepath.Join(root, "*-members-replace-*", recordFile))
	if err != nil {
		return nil, "", fmt.Errorf("look for earlier replacements in %s: %w", root, err)
	}
	slices.Sort(paths)
	for i := len(paths) - 1; i >= 0; i-- {
		data, err := os.ReadFile(paths[i])
		if err != nil {
			return nil, "", fmt.Errorf("read %s: %w", paths[i], err)
		}
		var r replaceRecord
		if err := json.Unmarshal(data, &r); err != nil {
			if strings.HasSuffix(filepath.Dir(paths[i]), "-members-replace-"+strings.ToLower(member)) {
				return nil, "", fmt.Errorf("%s is damaged (%v): move it aside, and if %s was removed, add it back by hand with `etcdctl member add %s --learner --peer-urls=...`", paths[i], err, member, member)
			}
			continue
		}
		if r.Member != member || r.Cluster != cluster {
			continue
		}
		if r.Stage != "removing" || len(r.PeerURLs) == 0 {
			return nil, "", nil
		}
		return &r, filepath.Dir(paths[i]), nil
	}
	return nil, "", nil
}
