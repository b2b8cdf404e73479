package space

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/pkg/etcdmembers"
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

// Members reads every member's database size, size in use and quota, and
// the alarms raised (etcdmembers.Read: each member at the endpoint given
// that answers as it, else at its client URLs). etcd's Status says the
// quota from 3.6 on; before, it is read from the member's
// etcd_server_quota_backend_bytes metric, else taken from
// MemberOptions.Quota. A member that does not answer is listed with why;
// notes say what could not be read at all (kine has no member list or
// alarms).
func Members(ctx context.Context, cli *clientv3.Client, o MemberOptions) (members []Member, alarms []Alarm, notes []string) {
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	read, alarms, notes := etcdmembers.Read(ctx, cli, o.Timeout)
	members = make([]Member, len(read))
	var wg sync.WaitGroup
	for i := range read {
		members[i].Member = read[i]
		wg.Go(func() { quota(ctx, &members[i], o) })
	}
	wg.Wait()
	for i := range members {
		if members[i].Name == "" {
			members[i].Name = members[i].ID
		}
	}
	return members, alarms, notes
}

// quota fills m's fragmented bytes and its quota.
func quota(ctx context.Context, m *Member, o MemberOptions) {
	if !m.Answers() {
		return
	}
	m.Fragmented = m.DBSize - m.DBSizeInUse
	if m.Quota = m.StatusQuota(); m.Quota > 0 {
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
	plain := make([]etcdmembers.Member, len(members))
	for i, m := range members {
		plain[i] = m.Member
	}
	return etcdmembers.NotEtcd(plain)
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
