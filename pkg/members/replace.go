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
func Replace(ctx context.Context, o ReplaceOptions) (*Replacement, error) {
	if o.Member == "" {
		return nil, fmt.Errorf("%w: name the member to replace", ErrRefused)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	cli := o.Compare.Client
	list, err := memberList(ctx, cli, o.Compare.timeout())
	if err != nil {
		return nil, err
	}
	res := &Replacement{Member: o.Member}
	// Taken up again: the member is a learner at the peer URLs an earlier
	// run recorded, or has not been added back yet.
	if rec, dir, err := latestRecord(o.EvidenceRoot, o.Member); err != nil {
		return nil, err
	} else if rec != nil && findByName(list, o.Member) == nil {
		res.PeerURLs, res.Dir, res.ID, res.Evidence = rec.PeerURLs, dir, rec.ID, rec.Evidence
		if l := findByPeers(list, rec.PeerURLs); l != nil && !l.IsLearner {
			return nil, fmt.Errorf("%w: a voting member %q is at %s's peer URLs %s; nothing to take up", ErrRefused, l.Name, o.Member, strings.Join(rec.PeerURLs, ","))
		}
		return resume(ctx, o, res, list)
	}
	target := findByName(list, o.Member)
	if target == nil {
		return nil, fmt.Errorf("%w: no member named %q in the member list (%s)", ErrRefused, o.Member, memberNames(list))
	}
	if target.IsLearner {
		res.PeerURLs, res.ID = target.PeerURLs, hexID(target.ID)
		return resume(ctx, o, res, list)
	}
	res.ID, res.PeerURLs = hexID(target.ID), target.PeerURLs

	o.Compare.progress("comparing the members before anything is changed")
	before, err := Compare(ctx, o.Compare)
	if err != nil {
		return nil, err
	}
	res.Before = before
	if why := refuseReplace(before, o.Member); why != "" {
		return res, fmt.Errorf("%w: %s; nothing was changed", ErrRefused, why)
	}
	leader := slices.IndexFunc(before.Members, func(m Member) bool { return m.Leader })
	moveTo := ""
	if leader >= 0 && before.Members[leader].Name == o.Member {
		moveTo = furthest(before, o.Member)
		if moveTo == "" {
			return res, fmt.Errorf("%w: %s leads and no member of the majority can take the leadership; nothing was changed", ErrRefused, o.Member)
		}
	}
	res.Steps = planSteps(before, o.Member, moveTo, res.PeerURLs)
	res.OnNode = onNode(o.Member, res.PeerURLs, list)
	if !o.Confirm {
		res.Stage = StagePlanned
		return res, nil
	}

	// 2. The evidence.
	dir, err := backup.NewBackupDir(o.EvidenceRoot, "members-replace-"+o.Member, o.Now())
	if err != nil {
		return res, err
	}
	res.Dir = dir
	var need uint64
	for _, m := range before.Members {
		need += uint64(m.DBSize) + 4096
	}
	need += need / 10
	if room, err := diskroom.Of(dir); err != nil {
		return res, err
	} else if !room.Fits(need) {
		return res, fmt.Errorf("%w: the members' snapshots need %d bytes in %s, which would leave less than its reserve free; nothing was changed", ErrRefused, need, dir)
	}
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
		o.Compare.progress("moving the leadership from %s to %s", o.Member, moveTo)
		if err := moveLeader(ctx, o.Compare, before, o.Member, moveTo); err != nil {
			return res, fmt.Errorf("move the leadership from %s to %s: %w; nothing else was changed", o.Member, moveTo, err)
		}
		res.MovedLeaderTo = moveTo
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
		return res, fmt.Errorf("remove member %s: %w; the evidence is in %s", o.Member, err, dir)
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
		if err == nil {
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

// refuseReplace says why the comparison does not allow replacing member,
// or "".
func refuseReplace(r *Report, member string) string {
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
	}
	for _, n := range v.NotCompared {
		if n != member {
			return n + " could not be compared: every member other than the one replaced must answer"
		}
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
		if slices.Equal(m.PeerURLs, peers) || name == "" {
			name = member
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
func planSteps(r *Report, member, moveTo string, peers []string) []string {
	var saved []string
	for _, m := range r.Members {
		if !m.Learner && m.Endpoint != "" {
			saved = append(saved, m.Name)
		}
	}
	steps := []string{fmt.Sprintf("save and verify the snapshot of every member (%s) as evidence", strings.Join(saved, ", "))}
	if moveTo != "" {
		steps = append(steps, fmt.Sprintf("move the leadership from %s to %s (a new member copies from the leader)", member, moveTo))
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
	Member   string     `json:"member"`
	ID       string     `json:"id"`
	PeerURLs []string   `json:"peerURLs"`
	Evidence []Evidence `json:"evidence"`
}

func writeRecord(dir string, res *Replacement, stage string) error {
	data, err := json.MarshalIndent(replaceRecord{Stage: stage, Member: res.Member, ID: res.ID, PeerURLs: res.PeerURLs, Evidence: res.Evidence}, "", "  ")
	if err != nil {
		return err
	}
	p := filepath.Join(dir, recordFile)
	if err := os.WriteFile(p, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	return backup.SyncDir(dir)
}

// latestRecord is the newest replace.json under root that names member.
func latestRecord(root, member string) (*replaceRecord, string, error) {
	if root == "" {
		return nil, "", nil
	}
	paths, err := filepath.Glob(filepath.Join(root, "*-members-replace-*", recordFile))
	if err != nil {
		return nil, "", nil
	}
	slices.Sort(paths)
	for i := len(paths) - 1; i >= 0; i-- {
		data, err := os.ReadFile(paths[i])
		if err != nil {
			return nil, "", fmt.Errorf("read %s: %w", paths[i], err)
		}
		var r replaceRecord
		if err := json.Unmarshal(data, &r); err != nil {
			return nil, "", fmt.Errorf("%s is damaged (%v): move it aside, and if %s was removed, add it back by hand with `etcdctl member add %s --learner --peer-urls=...`", paths[i], err, member, member)
		}
		if r.Member == member && len(r.PeerURLs) > 0 && r.Stage != "replaced" {
			return &r, filepath.Dir(paths[i]), nil
		}
	}
	return nil, "", nil
}
