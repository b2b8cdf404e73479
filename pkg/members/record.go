package members

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/regghost/regghost/pkg/backup"
)

// recordFile is where a replacement under way is kept, beside its
// evidence.
const recordFile = backup.ReplaceRecordFile

// The stages of a record.
const (
	// recordRemoving: the replacement is under way, from the evidence on;
	// a later run of the same member and cluster takes it up.
	recordRemoving = backup.ReplaceUnderWay
	// recordReplaced: it ended; never taken up again.
	recordReplaced = "replaced"
	// recordAbandoned: it stopped before the member was removed.
	recordAbandoned = "abandoned"
	// recordSuperseded: the member list shows the member replaced
	// otherwise (another member at its peer URLs, or never removed).
	recordSuperseded = "superseded"
)

// replaceRecord is replace.json: what a later run needs to take a
// replacement up again, and to reach the cluster from the member's own
// node once its etcd is gone.
type replaceRecord struct {
	Stage    string   `json:"stage"`
	Cluster  string   `json:"cluster"`
	Member   string   `json:"member"`
	ID       string   `json:"id"`
	PeerURLs []string `json:"peerURLs"`
	// Others are the client URLs of the voting members left standing.
	Others []string `json:"otherClientURLs,omitempty"`
	// LearnerID is the ID the member was added back with ("" until then).
	LearnerID string     `json:"learnerID,omitempty"`
	Evidence  []Evidence `json:"evidence"`
	// Written is when it was last written.
	Written time.Time `json:"written"`
	// Why says why a record ended otherwise than replaced.
	Why string `json:"why,omitempty"`
}

func writeRecord(dir string, rec replaceRecord, now time.Time) error {
	rec.Written = now.UTC()
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	p := filepath.Join(dir, recordFile)
	tmp := p + ".part"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	return backup.SyncDir(dir)
}

// recordPaths are the replace.json files under root, newest first.
func recordPaths(root string) ([]string, error) {
	if root == "" {
		return nil, nil
	}
	paths, err := filepath.Glob(filepath.Join(root, "*-members-replace-*", recordFile))
	if err != nil {
		return nil, fmt.Errorf("look for earlier replacements in %s: %w", root, err)
	}
	slices.Sort(paths)
	slices.Reverse(paths)
	return paths, nil
}

// latestRecord is the newest record under root of member in etcd cluster
// cluster, when it is a replacement still under way: a newer record that
// ended, or another cluster's, never lets an older one be taken up. A
// damaged record of the member is an error; another member's is skipped.
func latestRecord(root, member, cluster string) (*replaceRecord, string, error) {
	paths, err := recordPaths(root)
	if err != nil {
		return nil, "", err
	}
	for _, p := range paths {
		r, err := readRecord(p)
		if err != nil {
			if strings.HasSuffix(filepath.Dir(p), "-members-replace-"+strings.ToLower(member)) {
				return nil, "", fmt.Errorf("%s is damaged (%v): move it aside, and if %s was removed, add it back by hand with "+
					"`etcdctl member add %s --learner --peer-urls=...`", p, err, member, member)
			}
			continue
		}
		if r.Member != member || r.Cluster != cluster {
			continue
		}
		if r.Stage != recordRemoving || len(r.PeerURLs) == 0 {
			return nil, "", nil
		}
		return r, filepath.Dir(p), nil
	}
	return nil, "", nil
}

func readRecord(p string) (*replaceRecord, error) {
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	var r replaceRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// RecordedFallback is the way to the cluster the newest replacement of
// member under way recorded under root: the client URLs of the members it
// left standing. nil when there is none. It is what a run on the member's
// own node reaches the cluster by once the member's etcd is gone, or a
// learner (which serves no member list).
func RecordedFallback(root, member string) *Fallback {
	return recordedFallback(root, member, onThisNode)
}

func recordedFallback(root, member string, here func(*replaceRecord) bool) *Fallback {
	paths, err := recordPaths(root)
	if err != nil {
		return nil
	}
	for _, p := range paths {
		r, err := readRecord(p)
		if err != nil || r.Member != member {
			continue
		}
		// Only the member's own node falls back: a backup directory
		// shared by several clusters' nodes (a bastion) may hold another
		// cluster's member of that name, whose members must never be
		// reached, nor sent the credentials.
		if r.Stage != recordRemoving || len(r.Others) == 0 || !here(r) {
			return nil
		}
		return &Fallback{Endpoints: r.Others, Cluster: r.Cluster, From: p}
	}
	return nil
}

// onThisNode says whether rec's member ran on this machine: one of its
// peer URLs names an address of this machine's interfaces, or it is named
// after this host (kubeadm names members after their node).
func onThisNode(rec *replaceRecord) bool {
	if host, err := os.Hostname(); err == nil && host != "" && strings.EqualFold(host, rec.Member) {
		return true
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, raw := range rec.PeerURLs {
		u, err := url.Parse(raw)
		if err != nil {
			continue
		}
		ip := net.ParseIP(u.Hostname())
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && ip != nil && n.IP.Equal(ip) {
				return true
			}
		}
	}
	return false
}

// How a record of a replacement under way stands against the member list.
type takeUp int

const (
	// takeUpStale: the member list does not show the replacement the
	// record describes (never removed, or replaced otherwise).
	takeUpStale takeUp = iota
	// takeUpAdd: removed and not added back.
	takeUpAdd
	// takeUpPromote: added back as a learner, not promoted.
	takeUpPromote
	// takeUpCompare: promoted by a run whose answer was lost: left are
	// the comparison and the disarming.
	takeUpCompare
)

// standing says how rec stands against list, and why when it is stale.
// The member added back has another ID than the one removed; a learner
// there is taken up when the record names its ID, or named none yet (the
// answer to the add was lost); a voter there only when the record names
// its ID.
func standing(rec *replaceRecord, list []*pb.Member) (takeUp, string) {
	// The member the record was about to remove is still a member,
	// wherever its peer URLs now are (etcdctl member update keeps its
	// ID): a run stopped before the removal, never taken up.
	for _, m := range list {
		if hexID(m.ID) == rec.ID {
			return takeUpStale, fmt.Sprintf("member %s (%s) was never removed (it is at %s)", rec.Member, rec.ID, strings.Join(m.PeerURLs, ","))
		}
	}
	at := findByPeers(list, rec.PeerURLs)
	switch {
	case at == nil:
		return takeUpAdd, ""
	case hexID(at.ID) == rec.ID:
		return takeUpStale, fmt.Sprintf("member %s (%s) was never removed", rec.Member, rec.ID)
	case at.IsLearner && (rec.LearnerID == "" || hexID(at.ID) == rec.LearnerID):
		return takeUpPromote, ""
	case !at.IsLearner && rec.LearnerID != "" && hexID(at.ID) == rec.LearnerID:
		return takeUpCompare, ""
	}
	return takeUpStale, fmt.Sprintf("member %s (%x) is at %s's peer URLs %s, which this record did not add",
		orUnstarted(at.Name), at.ID, rec.Member, strings.Join(rec.PeerURLs, ","))
}
