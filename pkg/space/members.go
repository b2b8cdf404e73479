package space

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// MemberOptions say how the members are read.
type MemberOptions struct {
	// Timeout bounds the reads of each member.
	Timeout time.Duration
	// Metrics reads a member's /metrics page at a client URL (its quota,
	// for etcd before 3.6, whose Status does not say it); nil: not read.
	Metrics func(ctx context.Context, url string) (string, error)
	// Quota is --quota-backend-bytes as given, for the members that do
	// not say theirs (0: none given).
	Quota int64
}

// Where a member's quota was read.
const (
	QuotaFromStatus  = "status"
	QuotaFromMetrics = "metrics"
	QuotaFromFlag    = "--quota-backend-bytes"
)

// Members reads every member's database size, size in use and quota (the
// Status RPC), and the alarms raised. Each member is read at the endpoint
// given that answers as it, else at its client URLs in the member list
// (an advertised URL may not be reachable from here). etcd's Status says
// the quota from 3.6 on; before, it is read from the member's
// etcd_server_quota_backend_bytes metric, else taken from
// MemberOptions.Quota. A member that does not answer is listed with why;
// notes say what could not be read at all (kine has no member list or
// alarms).
func Members(ctx context.Context, cli *clientv3.Client, o MemberOptions) (members []Member, alarms []Alarm, notes []string) {
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	given := statuses(ctx, cli, cli.Endpoints(), o.Timeout)
	list, err := listMembers(ctx, cli, o.Timeout)
	if err != nil {
		notes = append(notes, fmt.Sprintf("the member list could not be read (%s): the endpoints given are read instead", firstLine(err)))
		list = nil
		for _, ep := range cli.Endpoints() {
			list = append(list, Member{Name: ep, Endpoints: []string{ep}})
		}
	}
	var wg sync.WaitGroup
	for i := range list {
		wg.Add(1)
		go func() {
			defer wg.Done()
			readMember(ctx, cli, &list[i], given, o)
		}()
	}
	wg.Wait()
	actx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	resp, err := cli.AlarmList(actx)
	if err != nil {
		notes = append(notes, fmt.Sprintf("the alarms could not be read: %s", firstLine(err)))
		return list, nil, notes
	}
	for _, am := range resp.Alarms {
		id := fmt.Sprintf("%x", am.MemberID)
		name := id
		for _, m := range list {
			if m.ID == id {
				name = m.Name
			}
		}
		alarms = append(alarms, Alarm{Member: name, ID: id, Alarm: am.Alarm.String()})
	}
	slices.SortFunc(alarms, func(a, b Alarm) int { return cmp.Or(cmp.Compare(a.Alarm, b.Alarm), cmp.Compare(a.Member, b.Member)) })
	return list, alarms, notes
}

// answer is one endpoint's Status.
type answer struct {
	endpoint string
	status   *pb.StatusResponse
	err      error
}

// statuses asks each endpoint for its Status, in parallel.
func statuses(ctx context.Context, cli *clientv3.Client, endpoints []string, timeout time.Duration) []answer {
	out := make([]answer, len(endpoints))
	var wg sync.WaitGroup
	for i, ep := range endpoints {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			st, err := cli.Status(sctx, ep)
			out[i] = answer{endpoint: ep, err: err}
			if err == nil {
				out[i].status = (*pb.StatusResponse)(st)
			}
		}()
	}
	wg.Wait()
	return out
}

// listMembers reads the member list.
func listMembers(ctx context.Context, cli *clientv3.Client, timeout time.Duration) ([]Member, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := cli.MemberList(ctx)
	if err != nil {
		return nil, err
	}
	var out []Member
	for _, m := range resp.Members {
		mem := Member{Name: m.Name, ID: fmt.Sprintf("%x", m.ID), Learner: m.IsLearner, Endpoints: m.ClientURLs}
		if mem.Name == "" {
			mem.Name = mem.ID
		}
		out = append(out, mem)
	}
	slices.SortFunc(out, func(a, b Member) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

// readMember fills m from its Status, and its quota: from an endpoint
// given that answered as m, else from m's first client URL that answers.
func readMember(ctx context.Context, cli *clientv3.Client, m *Member, given []answer, o MemberOptions) {
	var st *pb.StatusResponse
	for _, a := range given {
		if a.status != nil && a.status.Header != nil && (fmt.Sprintf("%x", a.status.Header.MemberId) == m.ID || (m.ID == "" && a.endpoint == m.Name)) {
			st, m.Endpoint = a.status, a.endpoint
			break
		}
	}
	if st == nil && len(m.Endpoints) == 0 {
		m.Unreachable = "no client URL (a member not started yet)"
		return
	}
	if st == nil {
		var why []string
		for _, a := range statuses(ctx, cli, m.Endpoints, o.Timeout) {
			if a.err != nil {
				why = append(why, a.endpoint+": "+firstLine(a.err))
				continue
			}
			st, m.Endpoint = a.status, a.endpoint
			break
		}
		if st == nil {
			m.Unreachable = strings.Join(why, "; ")
			return
		}
	}
	m.fromStatus(st)
	if m.Quota > 0 {
		m.QuotaSource = QuotaFromStatus
		return
	}
	// etcd says its quota in Status from 3.6 on, and a member's ID is
	// never 0: anything else answering so is not etcd (kine), and serves
	// no /metrics of etcd's on its gRPC port.
	if o.Metrics != nil && m.ID != "0" && olderThan36(m.Version) {
		mctx, cancel := context.WithTimeout(ctx, o.Timeout)
		defer cancel()
		if page, err := o.Metrics(mctx, m.Endpoint); err == nil {
			if q, ok := quotaMetric(page); ok {
				m.Quota, m.QuotaSource = q, QuotaFromMetrics
				return
			}
		}
	}
	if o.Quota > 0 {
		m.Quota, m.QuotaSource = o.Quota, QuotaFromFlag
	}
}

// fromStatus takes what a member's Status says.
func (m *Member) fromStatus(st *pb.StatusResponse) {
	m.Version = st.Version
	if st.Header != nil {
		if m.ID == "" || m.ID == "0" {
			m.ID = fmt.Sprintf("%x", st.Header.MemberId)
		}
		m.Leader = st.Leader != 0 && st.Leader == st.Header.MemberId
		m.LeaderKnown = st.Leader != 0
	}
	m.DBSize, m.DBSizeInUse = st.DbSize, st.DbSizeInUse
	if m.DBSizeInUse == 0 || m.DBSizeInUse > m.DBSize {
		// etcd before 3.4 (and kine) does not say it.
		m.DBSizeInUse = m.DBSize
	}
	m.Fragmented = m.DBSize - m.DBSizeInUse
	m.Quota = st.DbSizeQuota
	m.Errors = st.Errors
	m.Learner = m.Learner || st.IsLearner
}

// olderThan36 reports whether an etcd version is before 3.6 (or unknown).
func olderThan36(v string) bool {
	var major, minor int
	if _, err := fmt.Sscanf(v, "%d.%d", &major, &minor); err != nil {
		return true
	}
	return major < 3 || (major == 3 && minor < 6)
}

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

// quotaMetric reads etcd_server_quota_backend_bytes from a /metrics page.
func quotaMetric(page string) (int64, bool) {
	for _, l := range strings.Split(page, "\n") {
		rest, ok := strings.CutPrefix(l, "etcd_server_quota_backend_bytes ")
		if !ok {
			continue
		}
		var v float64
		if _, err := fmt.Sscan(strings.TrimSpace(rest), &v); err != nil || v <= 0 {
			return 0, false
		}
		return int64(v), true
	}
	return 0, false
}

// firstLine is an error's message up to its first line break.
func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}
