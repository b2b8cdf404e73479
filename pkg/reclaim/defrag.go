package reclaim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/pkg/etcdconn"
)

// pollEvery is how often a defragmented member is asked whether it is back.
const pollEvery = 500 * time.Millisecond

// defragmentAll defragments the voting members one at a time. Right before
// each it reads every member's Status again (leadership may have moved
// during the compaction, the last defragmentation or the wait for the
// member's compaction): it goes on only while every member is healthy and
// no alarm but NOSPACE is raised, picks a follower while one is left (see
// pick), lets the member finish the compaction (settle) and reads the
// members again after that wait, and checks the member's disk where it
// can. After each it waits for the member to come back healthy. It stops
// at the first step that fails and says where, and before the next member
// once etcd's lock was lost (lost closed; see lockWriters).
func defragmentAll(ctx context.Context, o Options, res *Result, lost <-chan struct{}) error {
	done, settled := map[string]bool{}, map[string]bool{}
	for {
		members := append([]Member{}, res.Plan.Members...)
		probeAll(ctx, o, members)
		next := pick(members, done)
		if next == nil {
			break
		}
		if why := unhealthy(ctx, o, members); why != "" {
			return stop(o, res, members, done, next.Name, why)
		}
		if !settled[next.ID] {
			settled[next.ID] = true
			if err := settle(ctx, o, next, res.Compaction.Revision); err != nil {
				return stop(o, res, members, done, next.Name, "it did not finish the compaction: "+oneLine(err))
			}
			// The wait may be long: the members are read again, and the
			// leader picked anew, right before the defragmentation.
			continue
		}
		if next.Disk.DataDir != "" {
			next.Disk = checkDisk(next, o.BackupRoot, 0)
			if next.Disk.Checked && !next.Disk.Fits {
				return stop(o, res, members, done, next.Name, fmt.Sprintf("its disk cannot hold the rewrite: %s", next.Disk.Why))
			}
		}
		if why := lockLost(lost); why != "" {
			return stop(o, res, members, done, next.Name, why)
		}
		r := MemberResult{Name: next.Name, ID: next.ID, Endpoint: next.Endpoint, Leader: leads(members, next),
			Before: next.DBSize, BeforeInUse: next.DBSizeInUse, Quota: next.Quota}
		o.progress(Step{Kind: StepDefragmenting, Result: res, Member: &r})
		start := time.Now()
		_, err := o.Client.Defragment(ctx, next.Endpoint)
		r.Seconds = time.Since(start).Seconds()
		if err != nil {
			r.Outcome, r.Why = Failed, "defragmentation failed: "+oneLine(err)
			res.Members = append(res.Members, r)
			done[next.ID] = true
			return stop(o, res, members, done, next.Name, r.Why)
		}
		back, why := waitHealthy(ctx, o, *next)
		r.After, r.AfterInUse = back.DBSize, back.DBSizeInUse
		if why != "" {
			r.Outcome, r.Why = Failed, why
			res.Members = append(res.Members, r)
			done[next.ID] = true
			return stop(o, res, members, done, next.Name, why)
		}
		r.Outcome = Defragmented
		res.Members = append(res.Members, r)
		done[next.ID] = true
		o.progress(Step{Kind: StepDefragmented, Result: res, Member: &res.Members[len(res.Members)-1]})
	}
	for _, m := range res.Plan.Members {
		if m.Learner {
			res.Members = append(res.Members, MemberResult{Name: m.Name, ID: m.ID, Endpoint: m.Endpoint, Learner: true, Outcome: Skipped,
				Why:    "etcd serves a learner no Defragment: promote it first, or defragment it stopped (etcdutl defrag --data-dir)",
				Before: m.DBSize, BeforeInUse: m.DBSizeInUse, Quota: m.Quota})
		}
	}
	return nil
}

// settle waits until m has applied the compaction at rev, so that its
// defragmentation rewrites the compacted keyspace and its size in use is
// fresh: each member compacts on its own, in the background, and a
// physical compaction waits for the member that served it alone. The same
// compaction again, sent to m alone, returns once m's earlier compactions
// are done (etcd queues a barrier behind them) and its backend committed;
// it answers "already compacted".
func settle(ctx context.Context, o Options, m *Member, rev int64) error {
	cfg := o.Config
	cfg.Endpoints = []string{m.Endpoint}
	cfg.Context = ctx
	cli, err := etcdconn.NewClient(cfg)
	if err != nil {
		return err
	}
	defer cli.Close()
	_, err = cli.Compact(ctx, rev, clientv3.WithCompactPhysical())
	if errors.Is(err, rpctypes.ErrCompacted) {
		return nil
	}
	return err
}

// pick is the next member to defragment: a voting member not done yet, a
// follower while one is left, else the leader. members are as their
// Status read them right before: a leader that moved onto a member done
// already leaves only followers; one that moved onto a member not done
// makes that member last.
func pick(members []Member, done map[string]bool) *Member {
	var leader *Member
	for i := range members {
		m := &members[i]
		switch {
		case m.Learner || done[m.ID]:
		case leads(members, m):
			if leader == nil {
				leader = m
			}
		default:
			return m
		}
	}
	if leader != nil {
		return leader
	}
	// No member says it leads (an election, or a member down): the first
	// left is tried, and the health check stops the run.
	for i := range members {
		if m := &members[i]; !m.Learner && !done[m.ID] {
			return m
		}
	}
	return nil
}

// leads says whether m leads: it says so, or a member names it as its
// leader. While leadership moves, the old leader and the new one may both
// be taken for it, and a follower goes before either.
func leads(members []Member, m *Member) bool {
	if m.Leader {
		return true
	}
	for _, other := range members {
		if m.id != 0 && other.leaderID == m.id {
			return true
		}
	}
	return false
}

// unhealthy says why the cluster is not fit for the next defragmentation:
// a member not healthy, or an alarm other than NOSPACE; "" when it is.
func unhealthy(ctx context.Context, o Options, members []Member) string {
	for _, m := range members {
		if !m.Healthy {
			return fmt.Sprintf("member %s is not healthy: %s", m.Name, m.Problem)
		}
	}
	alarms, err := listAlarms(ctx, o, members)
	if err != nil {
		return "the alarm list cannot be read: " + oneLine(err)
	}
	if other := otherAlarms(alarms); other != "" {
		return "alarm " + other
	}
	return ""
}

// waitHealthy waits until m answers healthy again, up to MemberWait, and
// returns it as it then is; why says why it did not come back.
func waitHealthy(ctx context.Context, o Options, m Member) (Member, string) {
	deadline := time.Now().Add(o.memberWait())
	for {
		probe(ctx, o, &m)
		if m.Healthy {
			return m, ""
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return m, fmt.Sprintf("it did not come back healthy within %s: %s", o.memberWait(), m.Problem)
		}
		select {
		case <-ctx.Done():
		case <-time.After(pollEvery):
		}
	}
}

// stop records where the run stopped: at member at, for why; the members
// not done are listed as not reached.
func stop(o Options, res *Result, members []Member, done map[string]bool, at, why string) error {
	s := &Stop{Member: at, Why: why, Done: []string{}, NotDone: []string{}}
	for _, r := range res.Members {
		if r.Outcome == Defragmented {
			s.Done = append(s.Done, r.Name)
		} else {
			s.NotDone = append(s.NotDone, r.Name)
		}
	}
	for _, m := range members {
		if done[m.ID] {
			continue
		}
		s.NotDone = append(s.NotDone, m.Name)
		res.Members = append(res.Members, MemberResult{Name: m.Name, ID: m.ID, Endpoint: m.Endpoint, Leader: m.Leader, Learner: m.Learner,
			Outcome: NotReached, Before: m.DBSize, BeforeInUse: m.DBSizeInUse, Quota: m.Quota})
	}
	res.Stop = s
	o.progress(Step{Kind: StepStopped, Result: res})
	return errors.New(stopMessage(s))
}

// stopMessage is the run's error after a stop.
func stopMessage(s *Stop) string {
	msg := fmt.Sprintf("stopped at member %s: %s", s.Member, s.Why)
	if len(s.Done) > 0 {
		msg += fmt.Sprintf("; defragmented: %v", s.Done)
	}
	msg += fmt.Sprintf("; not defragmented: %v; NOSPACE was not disarmed", s.NotDone)
	return msg
}
