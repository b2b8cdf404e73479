package members

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdmembers"
	"github.com/regghost/regghost/pkg/snapshot"
)

// runSteps walks the plan's steps in order. Each step's error says what
// was changed before it and what to do next. A stop (ctx ends: SIGINT,
// SIGTERM) is honoured between steps and in the waits for the learner,
// never inside a change of the member list: the next run takes the
// replacement up where it stopped. So is the writers' lock lost (its
// lease expired): no step starts without it, and the waits end at once.
func (r *replaceRun) runSteps(stop context.Context, p *replacePlan) (*Replacement, error) {
	ctx := context.WithoutCancel(stop)
	for _, s := range p.steps {
		if err := stop.Err(); err != nil {
			if p.dir == "" {
				return p.res, fmt.Errorf("stopped (%v); nothing was changed", err)
			}
			if s == stepLeadership || s == stepCheck || s == stepRemove {
				return p.res, r.abandon(p, fmt.Errorf("stopped (%v) before the removal; nothing was changed but the evidence in %s", err, p.dir))
			}
			return p.res, fmt.Errorf("%w (%v) before the step %q; run `%s` again to take it up", ErrStoppedMidway, err, s, r.o.again())
		}
		if r.lockLost() {
			return p.res, r.lostAt(p, s)
		}
		var err error
		switch s {
		case stepEvidence:
			err = r.evidence(ctx, p)
		case stepLeadership:
			err = r.leadership(ctx, p)
		case stepCheck:
			err = r.check(ctx, p)
		case stepRemove:
			err = r.remove(ctx, p)
		case stepAdd:
			err = r.add(ctx, p)
		case stepNode:
			r.o.Compare.progress("%s is a learner (%s): on its node, %s", r.o.Member, p.res.LearnerID, strings.Join(p.res.OnNode, "; "))
		case stepPromote:
			err = r.promote(stop, p)
		case stepCompare:
			err = r.compareAgain(stop, p)
		case stepDisarm:
			err = r.disarm(ctx, p)
		}
		if err != nil {
			return p.res, err
		}
	}
	return p.res, nil
}

// record writes the plan's record with stage.
func (r *replaceRun) record(p *replacePlan, stage, why string) error {
	if p.dir == "" {
		return nil
	}
	rec := replaceRecord{Stage: stage, Cluster: r.cluster, Member: r.o.Member, ID: p.res.ID, PeerURLs: p.res.PeerURLs,
		LearnerID: p.res.LearnerID, Evidence: p.res.Evidence, Why: why}
	if p.rec != nil {
		rec.Others = p.rec.Others
	}
	if len(rec.Others) == 0 {
		rec.Others = r.cl.ClientURLs(func(m etcdmembers.Member) bool {
			return m.Name != r.o.Member && !slices.Equal(m.PeerURLs, p.res.PeerURLs)
		})
	}
	p.rec = &rec
	return writeRecord(p.dir, rec, r.o.Now())
}

// evidence saves and verifies the snapshot of every member that answers
// (the disk budget of the plan holds them), writes the record, and then
// the backup file that lists the directory among the backups: a prune
// keeps it while the record says the replacement is under way.
func (r *replaceRun) evidence(ctx context.Context, p *replacePlan) error {
	o := r.o
	if o.EvidenceRoot == "" {
		return fmt.Errorf("%w: no directory for the evidence: pass --backup-dir; nothing was changed", ErrRefused)
	}
	if err := os.MkdirAll(o.EvidenceRoot, 0o700); err != nil {
		return fmt.Errorf("create %s: %w; nothing was changed", o.EvidenceRoot, err)
	}
	dir, err := backup.NewBackupDir(o.EvidenceRoot, "members-replace-"+o.Member, o.Now())
	if err != nil {
		return err
	}
	p.dir, p.res.Dir = dir, dir
	// The backup file names the snapshot of the member the new one copies
	// from: the leader of the majority.
	source := p.moveTo
	if source == "" {
		source = p.leader
	}
	var snap *backup.SnapshotInfo
	var snapFrom string
	for _, m := range saved(p.res.Before) {
		o.Compare.progress("saving %s's snapshot (evidence)", m.Name)
		cfg := o.Compare.Config
		cfg.Endpoints = []string{m.Endpoint}
		sctx, cancel := context.WithTimeout(ctx, o.stepTimeout())
		info, err := snapshot.SaveSnapshot(sctx, cfg, filepath.Join(dir, m.Name+".db"))
		cancel()
		if err != nil {
			// The snapshots saved so far go with it: a directory without a
			// record or backup file is nothing backup prune could remove.
			_ = os.RemoveAll(dir)
			return fmt.Errorf("save %s's snapshot: %w; nothing was changed (the evidence saved so far is removed)", m.Name, err)
		}
		p.res.Evidence = append(p.res.Evidence, Evidence{Member: m.Name, Path: info.Path, Revision: info.Revision, Size: info.Size, SHA256: info.SHA256})
		if m.Name == source || (snap == nil && slices.Contains(p.majority, m.Name)) {
			snap, snapFrom = info, m.Endpoint
		}
	}
	if err := r.record(p, recordRemoving, ""); err != nil {
		return fmt.Errorf("%w; nothing was changed", err)
	}
	b := &backup.Backup{Created: o.Now().UTC(), Scope: fmt.Sprintf("members replace %s: the evidence, each member's snapshot", o.Member),
		Action: backup.ActionMembersReplace, Endpoint: snapFrom, ClusterID: r.cluster, Snapshot: snap}
	// The kube-system UID groups it with this cluster's other backups, as
	// backup prune keeps the newest of each cluster (not of the evidence
	// alone); unread (encrypted, or no kube-system), the cluster ID does.
	if r.write != nil {
		if id, err := backup.ReadIdentity(ctx, r.write, o.Compare.Registry, nil); err == nil {
			b.KubeSystemUID = id.KubeSystemUID
		}
	}
	if snap != nil {
		b.ScanRevision = snap.Revision
	}
	if _, _, err := backup.WriteBackup(dir, b); err != nil {
		return r.abandon(p, fmt.Errorf("write the evidence's %s: %w; nothing was changed but the evidence in %s", backup.BackupFile, err, dir))
	}
	return nil
}

// abandon ends the record of a replacement that stopped before the
// removal, and says so.
func (r *replaceRun) abandon(p *replacePlan, err error) error {
	_ = r.record(p, recordAbandoned, firstLine(err))
	return err
}

// leadership moves the leadership to the majority member furthest along
// when the member leading right now is not of the majority.
func (r *replaceRun) leadership(ctx context.Context, p *replacePlan) error {
	before := p.res.Before
	now := r.leaderNow(ctx)
	if now == "" {
		now = p.leader
	}
	if now != r.o.Member && slices.Contains(p.majority, now) {
		return nil
	}
	r.o.Compare.progress("moving the leadership from %s to %s", now, p.moveTo)
	if err := moveLeader(ctx, r.o.Compare, before, now, p.moveTo); err != nil {
		return r.abandon(p, fmt.Errorf("move the leadership from %s to %s: %w; nothing else was changed", now, p.moveTo, err))
	}
	p.res.MovedLeaderFrom, p.res.MovedLeaderTo = now, p.moveTo
	return nil
}

// leaderNow names the member that leads now, as the others say ("": none
// said).
func (r *replaceRun) leaderNow(ctx context.Context) string {
	for _, m := range r.cl.Members {
		if m.Name == r.o.Member {
			continue
		}
		for _, ep := range m.ClientURLs {
			sctx, cancel := context.WithTimeout(ctx, r.o.Compare.timeout())
			st, err := r.write.Status(sctx, ep)
			cancel()
			if err == nil && st.Leader != 0 {
				for _, l := range r.list {
					if l.ID == st.Leader {
						return l.Name
					}
				}
			}
		}
	}
	return ""
}

// check makes sure, right before the removal, that every other voting
// member still answers, caught up, with no alarm: the snapshots may have
// taken minutes.
func (r *replaceRun) check(ctx context.Context, p *replacePlan) error {
	var lead uint64
	var others []*etcdmembers.Member
	for i := range r.cl.Members {
		m := &r.cl.Members[i]
		if m.Learner || m.Name == r.o.Member {
			continue
		}
		err := etcdmembers.ReadOne(ctx, r.write, m, r.o.Compare.timeout())
		if err == nil && len(m.Errors) > 0 {
			err = errors.New(strings.Join(m.Errors, "; "))
		}
		if err != nil {
			return r.abandon(p, fmt.Errorf("%w: %s does not answer now (%s): removing %s would leave the cluster without its quorum at the next failure; nothing else was changed",
				ErrRefused, m.Name, firstLine(err), r.o.Member))
		}
		lead = max(lead, m.AppliedIndex)
		others = append(others, m)
	}
	for _, m := range others {
		if m.AppliedIndex+5000 < lead || m.RaftIndex > m.AppliedIndex+5000 {
			return r.abandon(p, fmt.Errorf("%w: %s is behind now (applied %d, the others %d, raft index %d); nothing else was changed",
				ErrRefused, m.Name, m.AppliedIndex, lead, m.RaftIndex))
		}
	}
	if p.down {
		// Judged down once, from this node, before the snapshots: a
		// member that answers now (a crash loop's restart, a network cut
		// only from here) was never compared, and is not removed unseen.
		for i := range r.cl.Members {
			m := r.cl.Members[i]
			if m.Name != r.o.Member {
				continue
			}
			if err := etcdmembers.ReadOne(ctx, r.write, &m, r.o.Compare.timeout()); err == nil && len(m.Errors) == 0 {
				return r.abandon(p, fmt.Errorf("%w: %s answers again since it was judged down: run members replace again, so that it is compared first; nothing else was changed",
					ErrRefused, r.o.Member))
			}
		}
	}
	alarms, err := etcdmembers.Alarms(ctx, r.write, r.cl.Members, r.o.Compare.timeout())
	if err != nil {
		return r.abandon(p, fmt.Errorf("read the alarms: %w; nothing else was changed", err))
	}
	for _, a := range alarms {
		if a.Alarm == "NOSPACE" {
			return r.abandon(p, fmt.Errorf("%w: NOSPACE is raised on %s now; nothing else was changed", ErrRefused, a.Member))
		}
	}
	return nil
}

// remove removes the member, through the other members' client URLs.
func (r *replaceRun) remove(ctx context.Context, p *replacePlan) error {
	o := r.o
	o.Compare.progress("removing %s (%s) from the cluster", o.Member, p.res.ID)
	err := reconfigure(ctx, o.Compare, "remove "+o.Member, func(ctx context.Context) error {
		_, err := r.write.MemberRemove(ctx, p.target.ID)
		if err != nil {
			// An answer lost: what the member list says counts.
			if now, lerr := memberList(ctx, r.write, o.Compare.timeout()); lerr == nil && findByName(now, o.Member) == nil && findByPeers(now, p.res.PeerURLs) == nil {
				return nil
			}
		}
		return err
	})
	if err != nil {
		if now, lerr := memberList(context.WithoutCancel(ctx), r.write, o.Compare.timeout()); lerr == nil && findByName(now, o.Member) != nil {
			return r.abandon(p, fmt.Errorf("remove member %s: %w; it is still a member, nothing else was changed; the evidence is in %s", o.Member, err, p.dir))
		}
		return fmt.Errorf("remove member %s: %w; it may have been removed: run `%s` again to take it up; the evidence is in %s",
			o.Member, err, o.again(), p.dir)
	}
	list, err := memberList(ctx, r.write, o.Compare.timeout())
	if err != nil {
		return fmt.Errorf("%w (after %s was removed: run `%s` again, or add it back with `etcdctl member add %s --learner --peer-urls=%s`)",
			err, o.Member, o.again(), o.Member, strings.Join(p.res.PeerURLs, ","))
	}
	r.list = list
	return nil
}

// add adds the member back as a learner, and records its new ID.
func (r *replaceRun) add(ctx context.Context, p *replacePlan) error {
	o := r.o
	o.Compare.progress("adding %s back as a learner at %s", o.Member, strings.Join(p.res.PeerURLs, ","))
	var resp *clientv3.MemberAddResponse
	err := reconfigure(ctx, o.Compare, "add "+o.Member+" back", func(ctx context.Context) error {
		var err error
		resp, err = r.write.MemberAddAsLearner(ctx, p.res.PeerURLs)
		return err
	})
	if err != nil {
		return fmt.Errorf("add %s back as a learner: %w; it is removed: run `%s` again, or `etcdctl member add %s --learner --peer-urls=%s`",
			o.Member, err, o.again(), o.Member, strings.Join(p.res.PeerURLs, ","))
	}
	r.list = resp.Members
	p.res.LearnerID = hexID(resp.Member.ID)
	p.res.OnNode = onNode(o.Member, p.res.PeerURLs, r.list, r.localNode(), copySize(p.res.Before, o.Member))
	if err := r.record(p, recordRemoving, ""); err != nil {
		return fmt.Errorf("%s was added back as learner %s, but: %w", o.Member, p.res.LearnerID, err)
	}
	return nil
}

// promote promotes the learner once etcd says it has caught up, trying
// every Poll for up to Wait. When the wait ends, or the run is stopped,
// first, the member is left a learner and the next run takes it up; so it
// is when the writers' lock is lost, at once: no promotion is tried
// without it.
func (r *replaceRun) promote(ctx context.Context, p *replacePlan) error {
	o := r.o
	learner := findByPeers(r.list, p.res.PeerURLs)
	if learner == nil {
		return fmt.Errorf("no member is at %s's peer URLs %s: it was removed meanwhile; run `%s` again",
			o.Member, strings.Join(p.res.PeerURLs, ","), o.again())
	}
	p.res.LearnerID = hexID(learner.ID)
	waiting := func(cause string) error {
		p.res.Stage = StageWaiting
		return fmt.Errorf("%w: %s (%s) is a learner that has not started or caught up %s; once its etcd runs on its node as said, run `%s` again",
			ErrLearnerWaiting, o.Member, p.res.LearnerID, cause, o.again())
	}
	deadline := o.Now().Add(o.Wait)
	for {
		if ctx.Err() == nil && r.lockLost() {
			return r.lostAt(p, stepPromote)
		}
		mctx, cancel := context.WithTimeout(ctx, o.Compare.timeout())
		_, err := r.write.MemberPromote(mctx, learner.ID)
		cancel()
		if err == nil || errors.Is(rpctypes.Error(err), rpctypes.ErrMemberNotLearner) {
			break // promoted, by this try or by one whose answer was lost
		}
		if ctx.Err() != nil {
			return waiting("before this run was stopped (" + ctx.Err().Error() + ")")
		}
		if !notReady(err) && !transient(err) {
			return fmt.Errorf("promote %s: %w", o.Member, err)
		}
		if !o.Now().Before(deadline) {
			return waiting(fmt.Sprintf("within %s", o.Wait))
		}
		if err := r.pause(ctx, o.poll()); errors.Is(err, ErrLockLost) {
			return r.lostAt(p, stepPromote)
		} else if err != nil {
			return waiting("before this run was stopped")
		}
	}
	o.Compare.progress("%s promoted", o.Member)
	return nil
}

// compareAgain compares the members until they agree, for up to Wait: a
// comparison (each member's keyspace read, paced) once the new member has
// applied what the leader had when it was promoted, then again every
// interval while they still differ. A lost writers' lock ends it at once,
// a comparison under way included.
func (r *replaceRun) compareAgain(ctx context.Context, p *replacePlan) error {
	o := r.o
	deadline := o.Now().Add(o.Wait)
	copts := o.Compare
	copts.Keys = KeysAlways
	for {
		cctx, cancel := r.whileLocked(ctx, o.stepTimeout())
		after, err := Compare(cctx, copts)
		ranOut := ranOutOf(cctx, ctx)
		cancel()
		if ctx.Err() == nil && r.lockLost() {
			return r.lostAt(p, stepCompare)
		}
		if err != nil {
			if ctx.Err() != nil {
				p.res.Stage = StageDiffers
				return fmt.Errorf("%s was promoted; stopped before the members were compared again: run `%s` again", o.Member, o.again())
			}
			if ranOut {
				return fmt.Errorf("%s was promoted; comparing the members again did not finish within the --command-timeout %s each step has (%w): "+
					"run `%s` again with a longer --command-timeout to compare them and disarm CORRUPT", o.Member, flagDuration(o.stepTimeout()), err, o.again())
			}
			return fmt.Errorf("compare after the promotion: %w", err)
		}
		p.res.After = after
		if after.Verdict.Agree && !after.Incomplete() {
			break
		}
		if !o.Now().Before(deadline) || ctx.Err() != nil {
			p.res.Stage = StageDiffers
			return fmt.Errorf("%s was promoted, and the members do not agree yet: %s; run `%s` again to compare them and disarm CORRUPT",
				o.Member, after.Verdict.Reason, o.again())
		}
		o.Compare.progress("the members do not agree yet (%s); comparing again in %s", after.Verdict.Reason, 5*o.Compare.interval())
		if err := r.pause(ctx, 5*o.Compare.interval()); errors.Is(err, ErrLockLost) {
			return r.lostAt(p, stepCompare)
		} else if err != nil {
			p.res.Stage = StageDiffers
			return fmt.Errorf("%s was promoted; stopped before the members were compared again: run `%s` again", o.Member, o.again())
		}
	}
	p.res.Stage = StageReplaced
	return nil
}

// disarm disarms CORRUPT and ends the record.
func (r *replaceRun) disarm(ctx context.Context, p *replacePlan) error {
	if err := r.record(p, recordReplaced, ""); err != nil {
		return fmt.Errorf("every member agrees, but: %w", err)
	}
	disarmed, err := disarmCorrupt(ctx, r.write, r.o.Compare.timeout())
	p.res.Disarmed = disarmed
	if err != nil {
		return fmt.Errorf("every member agrees, but disarming CORRUPT failed: %w (`etcdctl alarm disarm`)", err)
	}
	return nil
}

// lockWriters takes the locks every regghost write holds, as pkg/protect
// takes them: this node's (etcdwrite.NodeLock, named after the etcd
// cluster ID), then etcd's, through cli (the members that stay: the
// lock's lease is kept alive there). Under an alarm (CORRUPT, NOSPACE)
// etcd refuses the etcd lock's writes: then this node's lock alone, once
// no regghost holds etcd's, and it says what that does not cover. lost is
// closed when etcd's lock is lost while held.
func lockWriters(ctx context.Context, o ReplaceOptions, cli *clientv3.Client, cluster string) (unlock func(), lost <-chan struct{}, err error) {
	return lockBoth(ctx, o.Compare, cli, cluster, "regghost members replace "+o.Member)
}

// lockLost reports whether the writers' lock was lost while held.
func (r *replaceRun) lockLost() bool {
	select {
	case <-r.lost:
		return true
	default:
		return false
	}
}

// pause waits d. It ends first when ctx ends (ctx's error: a stop, which
// also ends the lock's lease, is said as a stop) or when the writers'
// lock is lost (ErrLockLost).
func (r *replaceRun) pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
	case <-r.lost:
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return ErrLockLost
}

// whileLocked is a step's context, bounded by timeout, that also ends
// when the writers' lock is lost.
func (r *replaceRun) whileLocked(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	if r.lost == nil {
		return ctx, cancel
	}
	go func() {
		select {
		case <-r.lost:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// lockLostWhy says how a writers' lock is lost.
const lockLostWhy = "its lease expired: etcd unreachable from here, or this process paused, for over its TTL; another regghost may take it now"

// lostAt stops the run once the writers' lock is lost before or during
// step s, and says where the replacement stands (what was removed, added,
// promoted), the record it is taken up from, and the command that takes
// it up. Before the removal nothing was changed but the evidence (and
// the leadership moved): the record is ended, as for a stop.
func (r *replaceRun) lostAt(p *replacePlan, s replaceStep) error {
	o := r.o
	switch s {
	case stepEvidence, stepLeadership, stepCheck, stepRemove:
		if p.dir == "" {
			return fmt.Errorf("%w (%s), so this run stopped; nothing was changed", ErrLockLost, lockLostWhy)
		}
		moved := ""
		if p.res.MovedLeaderTo != "" {
			moved = fmt.Sprintf(" and the leadership, moved from %s to %s", p.res.MovedLeaderFrom, p.res.MovedLeaderTo)
		}
		return r.abandon(p, fmt.Errorf("%w (%s) before the removal, so this run stopped: nothing was changed but the evidence in %s%s; run `%s` to start again",
			ErrLockLost, lockLostWhy, p.dir, moved, o.again()))
	}
	var where, then string
	switch s {
	case stepAdd:
		where = fmt.Sprintf("%s (%s) is removed from etcd cluster %s and not added back yet; until it is added back and promoted the cluster runs with one voting member fewer",
			o.Member, orDash(p.res.ID), r.cluster)
		then = ": it adds it back as a learner"
	case stepNode, stepPromote:
		p.res.Stage = StageWaiting
		where = fmt.Sprintf("%s (%s) is removed from etcd cluster %s and added back as learner %s, not promoted; until it is promoted the cluster runs with one voting member fewer",
			o.Member, orDash(p.res.ID), r.cluster, orDash(p.res.LearnerID))
		then = fmt.Sprintf(" once its etcd runs on its node as said: it promotes %s once it has caught up", orDash(p.res.LearnerID))
	default:
		where = fmt.Sprintf("%s was promoted (now %s); the members were not compared again and CORRUPT was not disarmed", o.Member, orDash(p.res.LearnerID))
		then = ": it compares them and disarms CORRUPT"
	}
	return fmt.Errorf("%w: %w (%s): %s; %s records the replacement: run `%s` to take it up%s",
		ErrStoppedMidway, ErrLockLost, lockLostWhy, where, filepath.Join(p.dir, recordFile), o.again(), then)
}

// reconfigure runs a change of the member list, trying again for up to
// 30s while etcd refuses it for now: its strict reconfiguration check
// wants every member connected to the one asked for its health interval
// (5s), so a member that just started or just left makes it "unhealthy"
// for a moment.
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
		if err := sleep(ctx, time.Second); err != nil {
			return err
		}
	}
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
