package reclaim

import (
	"context"
	"fmt"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/regghost/regghost/pkg/etcdwrite"
)

// Plan is what Run would do, read from every member before anything is
// done.
type Plan struct {
	Datastore etcdwrite.Datastore `json:"datastore"`
	// Refusals say why Run would not start; none when it would.
	Refusals []string `json:"refusals,omitempty"`
	// Advice, for a datastore without etcd's maintenance RPCs (kine), says
	// what to do there instead; Run refuses it.
	Advice string `json:"advice,omitempty"`
	// Revision is the newest revision a member reported.
	Revision int64 `json:"revision"`
	// Alarms are the cluster's alarms.
	Alarms []Alarm `json:"alarms"`
	// Members are in the order Run would defragment them: followers, then
	// the leader; learners, which serve no Defragment, after them.
	Members []Member `json:"members"`
	// Snapshot is where the snapshot would go and whether it fits.
	Snapshot SnapshotPlan `json:"snapshot"`
	// Warnings are what a person must know before confirming the run:
	// under NOSPACE, that only this node's lock will be held.
	Warnings []string `json:"warnings,omitempty"`
}

// Alarm is one alarm a member raised.
type Alarm struct {
	// Member is the member's name ("" when it is not in the member list).
	Member   string `json:"member"`
	MemberID string `json:"memberID"`
	// Type is etcd's name of the alarm: NOSPACE, CORRUPT.
	Type string `json:"type"`

	id  uint64
	typ pb.AlarmType
}

// Member is one etcd member as Survey found it.
type Member struct {
	Name     string `json:"name"`
	ID       string `json:"id"`
	Endpoint string `json:"endpoint"`
	Leader   bool   `json:"leader"`
	Learner  bool   `json:"learner,omitempty"`
	Healthy  bool   `json:"healthy"`
	// Problem says why the member is not healthy.
	Problem string `json:"problem,omitempty"`
	// DBSize is the size of the member's db file, DBSizeInUse what of it
	// holds data: the difference is what a defragmentation gives back.
	DBSize      int64 `json:"dbSize"`
	DBSizeInUse int64 `json:"dbSizeInUse"`
	Revision    int64 `json:"revision"`
	Quota       Quota `json:"quota"`
	Disk        Disk  `json:"disk"`

	id       uint64
	leaderID uint64
	urls     []string
	// answered says the member answered its last Status; advertised that
	// its endpoint is a client URL it advertises that was not given.
	answered, advertised bool
}

// Fragmented is what a defragmentation of the member gives back now.
func (m *Member) Fragmented() int64 { return max(0, m.DBSize-m.DBSizeInUse) }

// Over says whether the member's db is at or over its quota: etcd raises
// NOSPACE again on the next write.
func (m *Member) Over() bool { return m.Quota.Bytes > 0 && m.DBSize >= m.Quota.Bytes }

// Quota is a member's quota and where it was learned.
type Quota struct {
	// Bytes is the quota; negative when the member runs without one.
	Bytes int64 `json:"bytes"`
	// Source says where it was read: "status", "metrics", the node's
	// manifest, "--quota-backend-bytes", or "assumed" (etcd's default).
	Source string `json:"source"`
	// Why says why the member's own word could not be read.
	Why string `json:"why,omitempty"`
}

// Disk is the room for a member's rewrite, where it can be checked.
type Disk struct {
	// DataDir is the member's data directory on this node, and From who
	// said so (--data-dir, the node's manifest); empty for a member whose
	// data directory is not known here.
	DataDir string `json:"dataDir,omitempty"`
	From    string `json:"from,omitempty"`
	// Checked says the room was read; Why says why not, or why it does not fit.
	Checked bool   `json:"checked"`
	Why     string `json:"why,omitempty"`
	// Need is what the rewrite takes; Free and Keep are the filesystem's
	// free space and what must stay free (pkg/diskroom).
	Need uint64 `json:"need,omitempty"`
	Free uint64 `json:"free,omitempty"`
	Keep uint64 `json:"keep,omitempty"`
	Fits bool   `json:"fits"`
	// SharesBackup says the snapshot goes to the same filesystem: its size
	// was counted as taken.
	SharesBackup bool `json:"sharesBackup,omitempty"`
}

// SnapshotPlan is where the snapshot goes and whether it fits there.
type SnapshotPlan struct {
	Root string `json:"root"`
	Need uint64 `json:"need"`
	Free uint64 `json:"free"`
	Keep uint64 `json:"keep"`
	Fits bool   `json:"fits"`
	Why  string `json:"why,omitempty"`
}

// Leader is the member that leads, nil when none does.
func (p *Plan) Leader() *Member {
	for i := range p.Members {
		if p.Members[i].Leader {
			return &p.Members[i]
		}
	}
	return nil
}

// NoSpace says whether the NOSPACE alarm is raised.
func (p *Plan) NoSpace() bool {
	for _, a := range p.Alarms {
		if a.typ == pb.AlarmType_NOSPACE {
			return true
		}
	}
	return false
}

// Survey reads every member into a plan. It fails only when the cluster
// cannot be read at all, or a --data-dir names no member; every reason Run
// would not start is in the plan's Refusals.
func Survey(ctx context.Context, o Options) (*Plan, error) {
	ds, err := etcdwrite.DetectDatastore(ctx, o.Client)
	if err != nil {
		return nil, fmt.Errorf("read the datastore's status: %w", err)
	}
	p := &Plan{Datastore: ds, Alarms: []Alarm{}, Members: []Member{}}
	if ds.Limited() {
		p.Advice = limitedAdvice(ds)
		p.Refusals = append(p.Refusals, ds.Name+" serves none of etcd's compaction, defragmentation and alarm RPCs")
		return p, nil
	}
	// Each member read and checked as it is listed.
	members, err := listMembers(ctx, o)
	if err != nil {
		return nil, err
	}
	if err := assignDataDirs(o, members); err != nil {
		return nil, err
	}
	for i := range members {
		p.Revision = max(p.Revision, members[i].Revision)
		learnQuota(ctx, o, &members[i])
	}
	p.Alarms, err = listAlarms(ctx, o, members)
	if err != nil {
		p.Refusals = append(p.Refusals, fmt.Sprintf("the alarm list cannot be read: %v", err))
	}
	if p.NoSpace() {
		p.Warnings = append(p.Warnings, noSpaceWarning)
	}
	p.Members = inOrder(members)
	p.Snapshot = planSnapshot(o.BackupRoot, members)
	for i := range p.Members {
		m := &p.Members[i]
		if !m.Learner {
			m.Disk = checkDisk(m, o.BackupRoot, p.Snapshot.Need)
		}
	}
	p.Refusals = append(p.Refusals, refusals(p)...)
	return p, nil
}

// refusals are the reasons the plan cannot start: a member not healthy, no
// leader, an alarm other than NOSPACE, no room for the snapshot or for a
// rewrite on this node.
func refusals(p *Plan) []string {
	var out []string
	for _, m := range p.Members {
		if !m.Healthy {
			why := fmt.Sprintf("member %s (%s) is not healthy: %s", m.Name, m.Endpoint, m.Problem)
			if m.advertised && !m.answered {
				why += " (that is the client URL it advertises; if this host reaches it another way, add that endpoint to --endpoints)"
			}
			out = append(out, why)
		}
	}
	if p.Leader() == nil && len(out) == 0 {
		out = append(out, "no member leads the cluster")
	}
	for _, a := range p.Alarms {
		if a.typ != pb.AlarmType_NOSPACE {
			out = append(out, fmt.Sprintf("member %s raised the %s alarm: defragmenting a member etcd found corrupt is not safe; see etcd's data corruption runbook first", orID(a.Member, a.MemberID), a.Type))
		}
	}
	if !p.Snapshot.Fits {
		out = append(out, "the snapshot does not fit: "+p.Snapshot.Why)
	}
	for _, m := range p.Members {
		if m.Disk.Checked && !m.Disk.Fits {
			out = append(out, fmt.Sprintf("member %s's disk cannot hold the rewrite: %s", m.Name, m.Disk.Why))
		}
	}
	return out
}

func orID(name, id string) string {
	if name != "" {
		return name
	}
	return id
}
