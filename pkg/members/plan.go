package members

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/pkg/etcdmembers"
	"github.com/regghost/regghost/pkg/plural"
)

// The steps of a replacement, in the order they run.
type replaceStep string

const (
	stepEvidence   replaceStep = "evidence"
	stepLeadership replaceStep = "leadership"
	stepCheck      replaceStep = "check"
	stepRemove     replaceStep = "remove"
	stepAdd        replaceStep = "add"
	stepNode       replaceStep = "node"
	stepPromote    replaceStep = "promote"
	stepCompare    replaceStep = "compare"
	stepDisarm     replaceStep = "disarm"
)

// replaceRun is one Replace: the cluster as reached, and the client every
// change and the lock go through: the voting members other than the one
// replaced, at their own client URLs. The member replaced stops as it
// applies its own removal, and may be the only endpoint given.
type replaceRun struct {
	o       ReplaceOptions
	cl      *etcdmembers.Cluster
	write   *clientv3.Client
	list    []*pb.Member
	cluster string
	unlock  func()
	// lost is closed when the writers' lock is lost while held (nil: it
	// cannot be, or none is held: a dry run).
	lost <-chan struct{}
	// fs reads the filesystems written on (zero: this machine's).
	fs disks
}

// replacePlan is what survey found: the replacement to print, and what
// its steps need.
type replacePlan struct {
	res    *Replacement
	steps  []replaceStep
	target *pb.Member
	// rec is the record taken up (nil: a new replacement), dir its
	// directory.
	rec *replaceRecord
	dir string
	// down is set when the member replaced does not answer.
	down bool
	// leader is the member that led when compared; moveTo the majority
	// member the leadership moves to ("": it stays).
	leader, moveTo string
	// majority are the members whose data the new member may copy.
	majority []string
}

// startReplace reaches the cluster (as Setup reached it, else through
// o.Compare.Client), opens the client on the other voting members, reads
// the member list through it, and, to act, takes the locks every regghost
// write holds.
func startReplace(ctx context.Context, o ReplaceOptions) (*replaceRun, error) {
	cl := o.Compare.Cluster
	if cl == nil {
		var err error
		if cl, err = etcdmembers.Reach(ctx, o.Compare.Client, o.Compare.Config, o.Compare.timeout()); err != nil {
			return nil, err
		}
	}
	target := etcdmembers.ByName(cl.Members, o.Member)
	write, err := cl.Client(func(m etcdmembers.Member) bool { return target == nil || m.ID != target.ID })
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrRefused, err)
	}
	r := &replaceRun{o: o, cl: cl, write: write, cluster: cl.ID, unlock: func() {}}
	if r.list, err = memberList(ctx, write, o.Compare.timeout()); err != nil {
		write.Close()
		return nil, fmt.Errorf("%w: the members other than %s do not answer at their client URLs (%s)", err, o.Member, strings.Join(write.Endpoints(), ","))
	}
	if o.Confirm {
		unlock, lost, err := lockWriters(ctx, o, write, r.cluster)
		if err != nil {
			write.Close()
			return nil, fmt.Errorf("%w; nothing was changed", err)
		}
		r.unlock, r.lost = unlock, lost
	}
	return r, nil
}

func (r *replaceRun) close() {
	r.unlock()
	r.write.Close()
}

// survey plans the replacement: a replacement under way taken up from its
// record, or a new one, judged on a comparison of the members and on the
// health of the others. Its error is a refusal (ErrRefused) or a failure;
// nothing is changed on any path, but a stale record is marked as such
// when the run acts.
func (r *replaceRun) survey(ctx context.Context) (*replacePlan, error) {
	o := r.o
	if dup := duplicateName(r.list); dup != "" {
		return nil, fmt.Errorf("%w: two members are named %q: name them apart first (members are told apart by name); nothing was changed", ErrRefused, dup)
	}
	p := &replacePlan{res: &Replacement{Member: o.Member, Cluster: r.cluster}}
	rec, dir, err := latestRecord(o.EvidenceRoot, o.Member, r.cluster)
	if err != nil {
		return nil, err
	}
	if rec != nil {
		state, why := standing(rec, r.list)
		if state != takeUpStale {
			// A distribution that manages its own members is refused
			// before a replacement is taken up too.
			if err := r.refuseDistribution(ctx); err != nil {
				return nil, err
			}
			return r.takeUp(p, rec, dir, state)
		}
		p.res.Notes = append(p.res.Notes, fmt.Sprintf("%s records a replacement of %s the member list does not show (%s): it is not taken up",
			filepath.Join(dir, recordFile), o.Member, why))
		if o.Confirm {
			rec.Stage, rec.Why = recordSuperseded, why
			if err := writeRecord(dir, *rec, o.Now()); err != nil {
				return nil, err
			}
		}
	}
	p.target = findByName(r.list, o.Member)
	if p.target == nil {
		return nil, fmt.Errorf("%w: no member named %q in the member list (%s)", ErrRefused, o.Member, memberNames(r.list))
	}
	if p.target.IsLearner {
		return nil, fmt.Errorf("%w: %s is a learner that no replacement in %s added: promote it yourself once it has caught up (`etcdctl member promote %x`)",
			ErrRefused, o.Member, orDash(o.EvidenceRoot), p.target.ID)
	}
	for _, m := range r.list {
		if m.IsLearner {
			// etcd takes one learner by default (--max-learners): the
			// member removed could not be added back.
			return nil, fmt.Errorf("%w: %s is a learner (a member joining?): etcd takes one learner at a time, so %s could not be added back once removed; promote or remove it first; nothing was changed",
				ErrRefused, orUnstarted(m.Name), o.Member)
		}
	}
	p.res.ID, p.res.PeerURLs = hexID(p.target.ID), p.target.PeerURLs

	o.Compare.progress("comparing the members before anything is changed")
	copts := o.Compare
	copts.Keys = KeysAlways
	cctx, cancel := context.WithTimeout(ctx, o.stepTimeout())
	began := o.Now()
	before, err := Compare(cctx, copts)
	took := o.Now().Sub(began)
	ranOut := ranOutOf(cctx, ctx)
	cancel()
	if err != nil {
		if ranOut {
			return nil, r.ranOut(err)
		}
		return nil, err
	}
	p.res.Before = before
	p.res.Timing = timing(maxKeysRead(before), o.Compare.Reads.MaxKeysPerSecond, took, o.stepTimeout())
	why, refused := replaceable(before, o.Member, p.res.ID)
	if refused != "" {
		return p, fmt.Errorf("%w: %s; nothing was changed", ErrRefused, refused)
	}
	p.res.Why = why
	m := memberOf(before, o.Member)
	p.down = m.Unreachable != ""
	p.majority = before.Verdict.Majority
	if p.down {
		p.majority = compared(before)
	}
	if err := r.refuseDistribution(ctx); err != nil {
		return p, err
	}
	if why := degraded(before, o.Member); why != "" {
		return p, fmt.Errorf("%w: the cluster is already degraded: %s; removing %s now could leave it without a quorum; nothing was changed", ErrRefused, why, o.Member)
	}
	leader := slices.IndexFunc(before.Members, func(m Member) bool { return m.Leader && m.Unreachable == "" })
	if leader < 0 {
		return p, fmt.Errorf("%w: no member leads; nothing was changed", ErrRefused)
	}
	p.leader = before.Members[leader].Name
	if p.leader == o.Member || !slices.Contains(p.majority, p.leader) {
		if p.moveTo = furthest(before, o.Member, p.majority); p.moveTo == "" {
			return p, fmt.Errorf("%w: %s leads and no member of the majority can take the leadership; nothing was changed", ErrRefused, p.leader)
		}
	}
	if err := r.diskBudget(p, before); err != nil {
		return p, err
	}
	if err := r.timeBudget(p); err != nil {
		return p, err
	}
	p.res.Window = window(before, o.Member, p.down)
	p.res.OnNode = onNode(o.Member, p.res.PeerURLs, r.list, r.localNode(), copySize(before, o.Member))
	p.steps = []replaceStep{stepEvidence}
	if p.moveTo != "" {
		p.steps = append(p.steps, stepLeadership)
	}
	p.steps = append(p.steps, stepCheck, stepRemove, stepAdd, stepNode, stepPromote, stepCompare, stepDisarm)
	p.res.Steps = r.words(p)
	return p, nil
}

// takeUp plans the rest of a replacement a record describes.
func (r *replaceRun) takeUp(p *replacePlan, rec *replaceRecord, dir string, state takeUp) (*replacePlan, error) {
	p.rec, p.dir = rec, dir
	res := p.res
	res.PeerURLs, res.Dir, res.ID, res.Evidence = rec.PeerURLs, dir, rec.ID, rec.Evidence
	res.LearnerID = rec.LearnerID
	switch state {
	case takeUpAdd:
		p.steps = []replaceStep{stepAdd, stepNode, stepPromote, stepCompare, stepDisarm}
	case takeUpPromote:
		res.LearnerID = hexID(findByPeers(r.list, rec.PeerURLs).ID)
		p.steps = []replaceStep{stepNode, stepPromote, stepCompare, stepDisarm}
	case takeUpCompare:
		p.steps = []replaceStep{stepCompare, stepDisarm}
	}
	res.OnNode = onNode(r.o.Member, res.PeerURLs, r.list, r.localNode(), 0)
	if slices.Contains(p.steps, stepNode) {
		r.takeUpDisk(p, rec)
	}
	res.Steps = append([]string{fmt.Sprintf("take up the replacement of %s that %s records (removed from etcd cluster %s)",
		r.o.Member, filepath.Join(dir, recordFile), r.cluster)}, r.words(p)...)
	return p, nil
}

// words are the plan's steps, in words.
func (r *replaceRun) words(p *replacePlan) []string {
	member := r.o.Member
	var out []string
	for _, s := range p.steps {
		switch s {
		case stepEvidence:
			var saved []string
			for _, m := range p.res.Before.Members {
				if !m.Learner && m.Unreachable == "" {
					saved = append(saved, m.Name)
				}
			}
			w := fmt.Sprintf("evidence: save and verify the snapshot of %s", strings.Join(saved, ", "))
			if p.down {
				w += fmt.Sprintf(" (%s does not answer: its data directory, moved aside on its node, is its evidence)", member)
			}
			out = append(out, w)
		case stepLeadership:
			out = append(out, fmt.Sprintf("leadership: move it from %s to %s (a new member copies from the leader, which must hold the majority's copy)", p.leader, p.moveTo))
		case stepCheck:
			out = append(out, "check: right before the removal, every other voting member answers, caught up, with no alarm")
		case stepRemove:
			out = append(out, fmt.Sprintf("remove %s from the cluster, through the other members' client URLs", member))
		case stepAdd:
			out = append(out, fmt.Sprintf("add it back as a learner at %s", strings.Join(p.res.PeerURLs, ",")))
		case stepNode:
			out = append(out, "on its node: stop its etcd, move its data directory aside, start it with --initial-cluster-state=existing (the commands are printed)")
		case stepPromote:
			out = append(out, "promote the learner once it has caught up with the leader")
		case stepCompare:
			out = append(out, "compare the members again until they agree, key by key")
		case stepDisarm:
			out = append(out, "disarm CORRUPT")
		}
	}
	return out
}

// replaceable says why member (whose ID is id) may be replaced, or why it
// may not. A member named wrong on its hash, or on its keys compared at
// one shared revision, by a quorum of the members may be; so may a member
// that does not answer while every other member answers and they agree.
// A member behind is not wrong; a verdict on leases, member lists or
// current values alone (a member far behind) may name a member whose data
// is right; two members wrong leave the other a voter that may lead.
func replaceable(r *Report, member, id string) (why, refused string) {
	v := r.Verdict
	m := memberOf(r, member)
	if m == nil {
		return "", member + " was not in the comparison"
	}
	if m.ID != id {
		return "", fmt.Sprintf("the member compared as %s has ID %s, the member list's %s has %s: it changed meanwhile", member, m.ID, member, id)
	}
	if m.Behind != nil {
		return "", fmt.Sprintf("%s is behind, not wrong (%s, %s): give it time and compare again; "+
			"a member that stays behind is slow or cut off: look at its disk and network before replacing it", member, plural.Of(int(m.Behind.Entries), "raft entry"), plural.Of(int(m.Behind.Revisions), "revision"))
	}
	for _, o := range r.Members {
		if o.Name == member || o.Learner {
			continue
		}
		switch {
		case o.Unreachable != "":
			return "", o.Name + " does not answer (" + o.Unreachable + "): every member other than the one replaced must answer"
		case o.Behind != nil:
			return "", o.Name + " is behind: every member other than the one replaced must answer, caught up"
		}
	}
	// A member whose Status or HashKV failed in the last sample is in no
	// hash group: it must answer too.
	if n := len(r.Samples); n > 0 {
		for _, ms := range r.Samples[n-1].Members {
			if ms.Member != member && ms.Error != "" {
				return "", ms.Member + " did not answer the last hash sample (" + ms.Error + "): every member other than the one replaced must answer"
			}
		}
	}
	voters := 0
	for _, o := range r.Members {
		if !o.Learner {
			voters++
		}
	}
	if m.Unreachable != "" {
		others := voters - 1
		switch {
		case others < quorum(voters):
			return "", fmt.Sprintf("%s does not answer, and the other %d of %d members are no quorum", member, others, voters)
		case !v.Agree:
			return "", fmt.Sprintf("%s does not answer, and the others do not agree (%s): none of them can be vouched for to copy from", member, orDash(v.Reason+v.Refused))
		case r.Keys.Mode != ModeRevision:
			return "", fmt.Sprintf("%s does not answer, and the others' keys were not compared at one revision: run `regghost members` to compare them", member)
		}
		return fmt.Sprintf("%s does not answer (%s); the other %d members, a quorum of %d, agree: %s", member, m.Unreachable, others, voters, v.Reason), ""
	}
	switch {
	case v.Agree:
		return "", "the members agree: " + member + " is not wrong"
	case v.Unknown:
		return "", "too little could be compared to tell which member is wrong: " + v.Refused
	case len(v.Wrong) == 0:
		return "", "no member is named wrong (" + v.Refused + "): with no quorum agreeing, replacing one would copy data nobody can vouch for"
	case !slices.Contains(v.Wrong, member):
		return "", fmt.Sprintf("%s is not the wrong member: %s (%s)", member, strings.Join(v.Wrong, ", "), v.Reason)
	case len(v.Wrong) > 1:
		return "", fmt.Sprintf("%s are wrong: while one is replaced the others stay voters, and one of them may win an election while the learner "+
			"copies from the leader; restore the cluster from a majority member's snapshot instead (etcd's disaster recovery: "+
			"`etcdutl snapshot restore` on every member), or replace them by hand, one at a time, keeping a majority member leading",
			names(v.Wrong))
	case v.Basis != BasisHash && !(v.Basis == BasisKeys && r.Keys.Mode == ModeRevision):
		return "", fmt.Sprintf("%s is named wrong on %s alone (%s): replace a member only on its hash, or its keys compared at one revision; "+
			"run `regghost members` again once the cluster is quiet", member, orDash(v.Basis+" "+r.Keys.Mode), v.Reason)
	}
	return fmt.Sprintf("%s is named wrong: %s", member, v.Reason), ""
}

// degraded says why the members other than member cannot carry the
// cluster through the window ("": they can): an error in their Status, a
// NOSPACE alarm, or more raft entries committed than applied than etcd
// lets a member fall behind by (5000).
func degraded(r *Report, member string) string {
	var why []string
	for _, m := range r.Members {
		if m.Name == member || m.Learner {
			continue
		}
		switch {
		case len(m.Errors) > 0:
			why = append(why, fmt.Sprintf("%s reports %s", m.Name, strings.Join(m.Errors, "; ")))
		case slices.Contains(m.Alarms, "NOSPACE"):
			why = append(why, m.Name+" raised NOSPACE (`regghost space reclaim` first)")
		case m.RaftIndex > m.AppliedIndex+5000:
			why = append(why, fmt.Sprintf("%s has %s it has not applied", m.Name, plural.Of(int(m.RaftIndex-m.AppliedIndex), "raft entry")))
		}
	}
	if slices.Contains(r.ClusterAlarms, "NOSPACE") {
		why = append(why, "NOSPACE is raised on the whole cluster")
	}
	return strings.Join(why, "; ")
}

// window says what the cluster survives from the removal to the
// promotion, and what to do in it.
func window(r *Report, member string, down bool) *Window {
	voters := 0
	var left []string
	for _, m := range r.Members {
		if !m.Learner {
			voters++
			if m.Name != member {
				left = append(left, m.Name)
			}
		}
	}
	w := &Window{Voters: voters - 1, Quorum: quorum(voters - 1)}
	w.Tolerates = w.Voters - w.Quorum
	survives := "survives no further failure"
	if w.Tolerates > 0 {
		survives = fmt.Sprintf("survives %d more failure%s", w.Tolerates, map[bool]string{true: "s", false: ""}[w.Tolerates > 1])
	}
	first := fmt.Sprintf("From the removal until the learner is promoted, the cluster runs on %s (%s), "+
		"%d of them needed: it %s.", plural.Of(w.Voters, "voting member"), names(left), w.Quorum, survives)
	if down {
		first = fmt.Sprintf("%s does not answer: the cluster already runs on %s (%s), %d of them needed, and "+
			"removing %s does not change that: it %s until the learner is promoted.", member, plural.Of(w.Voters, "voting member"), names(left), quorum(voters), member, survives)
	}
	w.Words = []string{first,
		"The window lasts as long as the steps on the node and the learner's copy of the leader's data take: do them at once.",
		fmt.Sprintf("Keep %s up meanwhile: no restart, upgrade or reboot of their nodes.", names(left)),
		"If one of them fails inside the window and the cluster stops (writes time out), start that member again on its own data " +
			"directory, never moved or emptied, and the cluster comes back; then run this command again. If it cannot come back, " +
			"restore the cluster from a snapshot of the evidence (etcd's disaster recovery).",
	}
	return w
}

// localNode is this node's etcd member when it is the one replaced.
func (r *replaceRun) localNode() *localEtcd {
	n := r.o.Node
	if n == nil || n.Name != r.o.Member {
		return nil
	}
	d := r.disks()
	return &localEtcd{DataDir: n.DataDir, WalDir: n.WalDir, Source: n.Source,
		DataMount: n.DataDir != "" && d.mountPoint(n.DataDir), WalMount: n.WalDir != "" && d.mountPoint(n.WalDir)}
}

// memberOf is the report's member named name.
func memberOf(r *Report, name string) *Member {
	for i := range r.Members {
		if r.Members[i].Name == name {
			return &r.Members[i]
		}
	}
	return nil
}

// compared are the members compared: voters that answered, not behind.
func compared(r *Report) []string {
	var out []string
	for _, m := range r.Members {
		if !m.Learner && m.Unreachable == "" && m.Behind == nil {
			out = append(out, m.Name)
		}
	}
	return out
}

// furthest is the member of majority with the highest applied index, to
// take the leadership from member.
func furthest(r *Report, member string, majority []string) string {
	best, idx := "", uint64(0)
	for _, m := range r.Members {
		if m.Name != member && !m.Learner && slices.Contains(majority, m.Name) && m.Unreachable == "" && (best == "" || m.AppliedIndex > idx) {
			best, idx = m.Name, m.AppliedIndex
		}
	}
	return best
}

// refuseDistribution refuses a cluster whose members k3s, rke2 or
// OpenShift manage (or one whose keys that would tell cannot be read).
func (r *replaceRun) refuseDistribution(ctx context.Context) error {
	o := r.o
	if d := detectDistribution(ctx, r.write, o.Compare.Registry, r.cl.Members, o.Compare.timeout()); d != nil {
		return fmt.Errorf("%w: this is %s (%s): %s; regghost members still compares and names the member; nothing was changed",
			ErrRefused, d.Name, d.Evidence, d.Procedure)
	}
	return nil
}
