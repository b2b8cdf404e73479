package etcdmembers

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/pkg/etcdconn"
)

// ErrOnlyLearners is returned (wrapped) when every endpoint that answers
// is a learner: a learner serves no member list, so the cluster cannot be
// read from it.
var ErrOnlyLearners = errors.New("only a learner answers")

// Cluster is one etcd cluster as reached from wherever the operator
// stands: its ID, its member list, and which endpoint given answered as
// which member.
type Cluster struct {
	// ID is the etcd cluster's ID, in hex.
	ID string
	// Members is the member list, sorted by name (no status read yet).
	Members []Member
	// Given maps a member's ID to the endpoint given that answered as it.
	Given map[string]string
	// config is what every client is made from (TLS files, credentials).
	config clientv3.Config
}

// Reach reads the cluster through the endpoints cli was opened on (every
// one answered Status: see etcdconn's ConnectAny): which member each one
// is, and the member list, from an endpoint that is a voter (a learner
// serves none). cfg is the configuration every further client is made
// from. Nothing after Reach needs those endpoints: Client opens a client
// on the members' own client URLs.
func Reach(ctx context.Context, cli *clientv3.Client, cfg clientv3.Config, timeout time.Duration) (*Cluster, error) {
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	c := &Cluster{Given: map[string]string{}, config: cfg}
	var voters []answer
	var learners []string
	for _, a := range statuses(ctx, cli, cli.Endpoints(), timeout) {
		if a.err != nil || a.status.Header == nil {
			continue
		}
		id := HexID(a.status.Header.MemberId)
		if _, ok := c.Given[id]; !ok {
			c.Given[id] = a.endpoint
		}
		if c.ID == "" {
			c.ID = HexID(a.status.Header.ClusterId)
		}
		if a.status.IsLearner {
			learners = append(learners, a.endpoint)
		} else {
			voters = append(voters, a)
		}
	}
	// The member list is asked of the voter that answered its Status
	// first: a member starved of CPU answers slowest, and would cost the
	// timeout before the next is asked.
	slices.SortStableFunc(voters, func(a, b answer) int { return cmp.Compare(a.took, b.took) })
	if len(voters) == 0 && len(learners) > 0 {
		return nil, fmt.Errorf("%w: %s answers as a learner, which serves no member list: give another member's client URL with --endpoints",
			ErrOnlyLearners, strings.Join(learners, ", "))
	}
	var last error
	for _, v := range voters {
		one := cfg
		one.Endpoints = []string{v.endpoint}
		ocli, err := etcdconn.NewClient(one)
		if err != nil {
			last = err
			continue
		}
		resp, err := memberList(ctx, ocli, timeout)
		ocli.Close()
		if err != nil {
			last = err
			continue
		}
		c.Members = fromResponse(resp.Members)
		if resp.Header != nil {
			c.ID = HexID(resp.Header.ClusterId)
		}
		return c, nil
	}
	if last == nil {
		last = errors.New("no endpoint answers as a member")
	}
	return nil, last
}

// Client opens a client on the members keep keeps, learners left out: the
// endpoints given that answered as them, then their client URLs from the
// member list. Its requests go to whichever of them answers, so a member
// left out (one being removed, which stops as it applies its own removal)
// never carries them. nil keep keeps every voter.
func (c *Cluster) Client(keep func(Member) bool) (*clientv3.Client, error) {
	var eps []string
	for _, m := range c.Members {
		if m.Learner || (keep != nil && !keep(m)) {
			continue
		}
		if ep, ok := c.Given[m.ID]; ok && !slices.Contains(eps, ep) {
			eps = append(eps, ep)
		}
	}
	for _, m := range c.Members {
		if m.Learner || (keep != nil && !keep(m)) {
			continue
		}
		for _, u := range m.ClientURLs {
			if !slices.Contains(eps, u) {
				eps = append(eps, u)
			}
		}
	}
	if len(eps) == 0 {
		return nil, errors.New("no other voting member has a client URL in the member list")
	}
	cfg := c.config
	cfg.Endpoints = eps
	cli, err := etcdconn.NewClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to etcd %s: %w", strings.Join(eps, ","), err)
	}
	return cli, nil
}

// Config is the configuration every client of the cluster is made from.
func (c *Cluster) Config() clientv3.Config { return c.config }

// ClientURLs are the client URLs of the voting members keep keeps, as the
// member list says them (for a record a later run reaches the cluster by).
func (c *Cluster) ClientURLs(keep func(Member) bool) []string {
	var out []string
	for _, m := range c.Members {
		if !m.Learner && (keep == nil || keep(m)) {
			out = append(out, m.ClientURLs...)
		}
	}
	return out
}

// Raw is the member list as etcd's API gives it, for the callers that
// compare peer URLs.
func (c *Cluster) Raw() []*pb.Member {
	out := make([]*pb.Member, 0, len(c.Members))
	for _, m := range c.Members {
		out = append(out, &pb.Member{ID: m.RawID(), Name: m.Name, PeerURLs: m.PeerURLs, ClientURLs: m.ClientURLs, IsLearner: m.Learner})
	}
	return out
}
