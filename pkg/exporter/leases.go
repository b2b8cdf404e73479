package exporter

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/leases"
)

var (
	descEventsPastTTL = prometheus.NewDesc("regghost_events_past_ttl",
		"Events older than kube-apiserver's --event-ttl by the servers' clocks (a lease kept alive by leader changes, or none), by namespace: `regghost leases` removes them.",
		[]string{"namespace"}, nil)
	descEventsNoLease = prometheus.NewDesc("regghost_events_without_lease",
		"Events under no etcd lease (written back by a restore or another tool): they never expire.", []string{"namespace"}, nil)
	descLeaseClass = prometheus.NewDesc("regghost_etcd_lease_findings",
		"What the leases audit found, by class: events-past-ttl (absent when ages are not judged) and events-without-lease (every namespace), leases-over-limit (more keys than kube-apiserver puts on one, 1000: a revoke stalls etcd), leased-unexpected (keys under a lease that are neither events nor masterleases), masterleases-stale (an address no kube-apiserver answers at, or under no lease; absent when not every one could be asked), apiserver-identities-stale, leases-keyless (normal: counted, no fault; absent when etcd's leases could not be listed), values-not-judged (events or identity leases whose value or lease TTL could not be read).",
		[]string{"class"}, nil)
	descLeaseMaxKeys = prometheus.NewDesc("regghost_etcd_lease_max_keys",
		"The most keys one etcd lease holds (revoking it deletes them in one apply).", nil, nil)
	descLeaseHeldBytes = prometheus.NewDesc("regghost_etcd_lease_held_bytes",
		"Bytes of the keys and values the classes that hold keys hold: events-past-ttl, events-without-lease, leases-over-limit (every key of those leases).",
		[]string{"class"}, nil)
)

// leasesDescs are the leases series' descriptions.
var leasesDescs = []*prometheus.Desc{descEventsPastTTL, descEventsNoLease, descLeaseClass, descLeaseMaxKeys, descLeaseHeldBytes}

// LeasesSnapshot is what the leases audit found at the last good cycle, as
// counts keyed by their (escaped, bounded) label values.
type LeasesSnapshot struct {
	PastTTL, NoLease map[string]int
	Classes          map[string]int
	Held             map[string]int64
	MaxKeys          int
}

// AuditLeases wraps a cycle's scan: the keys the scan reads are audited as
// it reads them (leases.Tally: no second read of etcd), with the options
// options gives for the cycle's input; a good cycle's counts replace the
// leases series whole. A scan that did not read the whole registry leaves
// the last counts as they were.
func (c *Collector) AuditLeases(namespaceLimit int, options func(ctx context.Context, in ScanInput) leases.Options, scan func(ctx context.Context, in ScanInput) (*etcdscan.Report, error)) func(ctx context.Context, in ScanInput) (*etcdscan.Report, error) {
	return func(ctx context.Context, in ScanInput) (*etcdscan.Report, error) {
		t := leases.NewTally(options(ctx, in), in.Store.Revision())
		in.Store = t.Wrap(in.Store)
		rep, err := scan(ctx, in)
		if err != nil || !t.Observed() {
			return rep, err
		}
		snap := SummarizeLeases(t.Finish(ctx), namespaceLimit)
		c.mu.Lock()
		c.leases = snap
		c.mu.Unlock()
		return rep, nil
	}
}

// SummarizeLeases counts an audit under bounded labels: the namespaces
// with the most events past their TTL (or without a lease) keep their
// name, up to limit; the rest are "other". Every name is escaped.
func SummarizeLeases(a *leases.Audit, limit int) *LeasesSnapshot {
	s := &LeasesSnapshot{Classes: a.Counts(), Held: map[string]int64{}}
	s.PastTTL, s.NoLease = byNamespace(a.PastTTL, limit), byNamespace(a.NoLease, limit)
	for _, h := range a.Holding() {
		s.Held[h.Class] = h.Bytes
	}
	for _, l := range a.Leases {
		s.MaxKeys = max(s.MaxKeys, l.Keys)
	}
	return s
}

// byNamespace counts events per namespace, the busiest limit of them by
// name and the rest as "other".
func byNamespace(es []leases.Event, limit int) map[string]int {
	counts := map[string]int{}
	for _, e := range es {
		counts[e.Namespace]++
	}
	label := rankedLabels(counts, limit)
	out := map[string]int{}
	for ns, n := range counts {
		out[label(ns)] += n
	}
	return out
}

// collectLeases sends the leases series of the last good cycle.
func (c *Collector) collectLeases(ch chan<- prometheus.Metric) {
	s := c.leases
	if s == nil {
		return
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- constMetric(d, prometheus.GaugeValue, v, labels)
	}
	for ns, n := range s.PastTTL {
		gauge(descEventsPastTTL, float64(n), ns)
	}
	for ns, n := range s.NoLease {
		gauge(descEventsNoLease, float64(n), ns)
	}
	for class, n := range s.Classes {
		gauge(descLeaseClass, float64(n), class)
	}
	for class, b := range s.Held {
		gauge(descLeaseHeldBytes, float64(b), class)
	}
	gauge(descLeaseMaxKeys, float64(s.MaxKeys))
}
