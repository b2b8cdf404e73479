package etcdmembers

import (
	"strconv"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// Member is one member of the member list and, when it answered, what its
// Status said.
type Member struct {
	Name string `json:"name"`
	// ID is the member's ID in hex, as etcdctl prints it.
	ID string `json:"id"`
	// Endpoint is where its status was read: an endpoint given that
	// answers as it, else one of its client URLs.
	Endpoint string `json:"endpoint,omitempty"`
	// ClientURLs and PeerURLs are its URLs in the member list.
	ClientURLs []string `json:"clientURLs,omitempty"`
	PeerURLs   []string `json:"peerURLs,omitempty"`
	Version    string   `json:"version,omitempty"`
	Leader     bool     `json:"leader"`
	// LeaderKnown is set when the member said who leads (kine does not).
	LeaderKnown bool `json:"leaderKnown"`
	Learner     bool `json:"learner,omitempty"`
	// RaftTerm, RaftIndex and AppliedIndex are its raft term, its last
	// raft index and the last index it applied.
	RaftTerm     uint64 `json:"raftTerm,omitempty"`
	RaftIndex    uint64 `json:"raftIndex,omitempty"`
	AppliedIndex uint64 `json:"appliedIndex,omitempty"`
	// Revision is its current revision.
	Revision int64 `json:"revision,omitempty"`
	// DBSize is the db file's size, DBSizeInUse the part of it in use.
	DBSize      int64 `json:"dbSize"`
	DBSizeInUse int64 `json:"dbSizeInUse"`
	// Errors are the member's own (etcd's Status errors field).
	Errors []string `json:"errors,omitempty"`
	// Unreachable says why the member's status could not be read.
	Unreachable string `json:"unreachable,omitempty"`

	// quota is what its Status says of --quota-backend-bytes (etcd 3.6+).
	quota int64
	// leaderID is the member it says leads (0: none known).
	leaderID uint64
}

// StatusQuota is the member's --quota-backend-bytes as its Status says it
// (etcd 3.6 and later; 0 before, or when it did not answer).
func (m *Member) StatusQuota() int64 { return m.quota }

// LeaderID is the ID of the member it says leads (0: none known).
func (m *Member) LeaderID() uint64 { return m.leaderID }

// Answers reports whether its status was read.
func (m *Member) Answers() bool { return m.Unreachable == "" && m.Endpoint != "" }

// RawID is the member's ID as etcd's API takes it.
func (m *Member) RawID() uint64 {
	id, _ := strconv.ParseUint(m.ID, 16, 64)
	return id
}

// FromStatus takes what a member's Status says.
func (m *Member) FromStatus(st *pb.StatusResponse) {
	m.Version = st.Version
	if st.Header != nil {
		if m.ID == "" || m.ID == "0" {
			m.ID = HexID(st.Header.MemberId)
		}
		m.Leader = st.Leader != 0 && st.Leader == st.Header.MemberId
		m.LeaderKnown = st.Leader != 0
		m.Revision = st.Header.Revision
	}
	m.leaderID = st.Leader
	m.RaftTerm, m.RaftIndex, m.AppliedIndex = st.RaftTerm, st.RaftIndex, st.RaftAppliedIndex
	m.DBSize, m.DBSizeInUse = st.DbSize, st.DbSizeInUse
	if m.DBSizeInUse == 0 || m.DBSizeInUse > m.DBSize {
		// etcd before 3.4 (and kine) does not say it.
		m.DBSizeInUse = m.DBSize
	}
	m.quota = st.DbSizeQuota
	m.Errors = st.Errors
	m.Learner = m.Learner || st.IsLearner
	m.Unreachable = ""
}

// fromList is a member of the member list, not read yet. A member added
// and not started yet has no name.
func fromList(pm *pb.Member) Member {
	return Member{Name: pm.Name, ID: HexID(pm.ID), Learner: pm.IsLearner, ClientURLs: pm.ClientURLs, PeerURLs: pm.PeerURLs}
}

// HexID is a member or cluster ID as etcdctl prints it.
func HexID(id uint64) string { return strconv.FormatUint(id, 16) }

// NotEtcd reports whether the members that answered are not etcd's: kine
// (k3s's datastore over SQL) and other etcd APIs answer with member ID 0,
// which etcd never gives.
func NotEtcd(members []Member) bool {
	answered := false
	for _, m := range members {
		if m.Unreachable != "" {
			continue
		}
		if m.ID != "0" {
			return false
		}
		answered = true
	}
	return answered
}

// Alarm is one alarm raised: NOSPACE or CORRUPT, on a member (or member
// 0, the whole cluster).
type Alarm struct {
	Member string `json:"member"`
	ID     string `json:"memberID"`
	Alarm  string `json:"alarm"`
}

// ByName is the member named name, nil when none is.
func ByName(ms []Member, name string) *Member {
	for i := range ms {
		if ms[i].Name == name {
			return &ms[i]
		}
	}
	return nil
}

// Voters counts the members that are not learners: a quorum is more than
// half of them.
func Voters(ms []Member) int {
	n := 0
	for _, m := range ms {
		if !m.Learner {
			n++
		}
	}
	return n
}

// Quorum is etcd's: more than half of the voting members, whether they
// answer or not.
func Quorum(voters int) int { return voters/2 + 1 }

func firstLine(err error) string {
	s := err.Error()
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			return s[:i]
		}
	}
	return s
}
