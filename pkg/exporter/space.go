package exporter

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/space"
	"github.com/regghost/regghost/pkg/textsafe"
)

// DefaultResourceLimit is how many resources get a label value of their
// own in the space series (storage prefixes are few, but a client writing
// under made-up prefixes must not make a series each).
const DefaultResourceLimit = 200

var (
	descSpaceBytes = prometheus.NewDesc("regghost_etcd_resource_bytes",
		"Bytes of the values etcd holds now (each key's and value's length), by resource: the storage prefix under --prefix (configmaps, example.com/widgets); (outside the prefix) for other keys.",
		[]string{"resource"}, nil)
	descSpaceKeys = prometheus.NewDesc("regghost_etcd_resource_keys",
		"Keys etcd holds now, by resource (storage prefix).", []string{"resource"}, nil)
	descSpaceNamespace = prometheus.NewDesc("regghost_etcd_namespace_bytes",
		"Bytes of the values etcd holds now, by namespace (those holding the fewest share the label \"other\").",
		[]string{"namespace"}, nil)
	descSpaceGhost = prometheus.NewDesc("regghost_etcd_ghost_bytes",
		"Bytes of the values of the ghosts the last good scan found, by namespace: what a purge would free once etcd is compacted and defragmented.",
		[]string{"namespace"}, nil)
	descMemberSize = prometheus.NewDesc("regghost_etcd_member_db_size_bytes",
		"Each etcd member's db file size (what etcd counts against its quota).", []string{"member"}, nil)
	descMemberInUse = prometheus.NewDesc("regghost_etcd_member_db_size_in_use_bytes",
		"The part of each etcd member's db file in use; the rest is free pages a defragmentation gives back.", []string{"member"}, nil)
	descMemberFragmented = prometheus.NewDesc("regghost_etcd_member_fragmented_ratio",
		"The fragmented share of each etcd member's db file, 0 to 1: (db size - in use) / db size.", []string{"member"}, nil)
	descMemberQuota = prometheus.NewDesc("regghost_etcd_member_quota_bytes",
		"Each etcd member's --quota-backend-bytes (absent when it could not be read).", []string{"member"}, nil)
	descAlarm = prometheus.NewDesc("regghost_etcd_alarm",
		"1 for each alarm raised on an etcd member (NOSPACE: etcd refuses writes until it is disarmed).", []string{"member", "alarm"}, nil)
)

// spaceDescs are the space series' descriptions.
var spaceDescs = []*prometheus.Desc{descSpaceBytes, descSpaceKeys, descSpaceNamespace, descSpaceGhost,
	descMemberSize, descMemberInUse, descMemberFragmented, descMemberQuota, descAlarm}

// SpaceSnapshot is where etcd's bytes were at the last good cycle, as
// counts keyed by their (escaped, bounded) label values.
type SpaceSnapshot struct {
	Bytes      map[string]int64
	Keys       map[string]int64
	Namespaces map[string]int64
	Ghosts     map[string]int64
	Members    []space.Member
	Alarms     []space.Alarm
}

// SpaceOptions configure MeasureSpace.
type SpaceOptions struct {
	// Prefix is the registry prefix.
	Prefix string
	// NamespaceLimit and ResourceLimit cap the label values (the rest
	// are "other"); DefaultResourceLimit when ResourceLimit is 0.
	NamespaceLimit, ResourceLimit int
	// Members say how the members' sizes and quotas are read.
	Members space.MemberOptions
}

// MeasureSpace wraps a cycle's scan: the values the scan reads are counted
// as it reads them (no second read of etcd), the ghosts it finds are sized,
// and the members' sizes, quotas and alarms read; a good cycle's counts
// replace the space series whole.
func (c *Collector) MeasureSpace(o SpaceOptions, scan func(ctx context.Context, in ScanInput) (*etcdscan.Report, error)) func(ctx context.Context, in ScanInput) (*etcdscan.Report, error) {
	return func(ctx context.Context, in ScanInput) (*etcdscan.Report, error) {
		a := space.NewAccount(space.Options{Prefix: o.Prefix, Top: -1})
		store := in.Store
		in.Store = a.Wrap(store)
		rep, err := scan(ctx, in)
		if err != nil {
			return nil, err
		}
		if err := a.CountOutside(ctx, store); err != nil {
			rep.Close()
			return nil, fmt.Errorf("read the keys outside %s: %w", o.Prefix, err)
		}
		if err := a.Ghosts(rep); err != nil {
			rep.Close()
			return nil, &CycleError{Reason: ReasonScan, Err: err}
		}
		r := a.Report()
		if in.Client != nil {
			r.Members, r.Alarms, _ = space.Members(ctx, in.Client, o.Members)
		}
		snap := SummarizeSpace(r, o.NamespaceLimit, o.ResourceLimit)
		c.mu.Lock()
		c.space = snap
		c.mu.Unlock()
		return rep, nil
	}
}

// SummarizeSpace counts a space report under bounded labels: the
// resources and namespaces holding the most bytes keep their name (limit
// of each; a limit of 0 or less keeps no namespace name), the rest are
// "other". Every name is escaped (textsafe.Escape).
func SummarizeSpace(r *space.Report, namespaceLimit, resourceLimit int) *SpaceSnapshot {
	if resourceLimit <= 0 {
		resourceLimit = DefaultResourceLimit
	}
	s := &SpaceSnapshot{Bytes: map[string]int64{}, Keys: map[string]int64{}, Namespaces: map[string]int64{}, Ghosts: map[string]int64{},
		Members: r.Members, Alarms: r.Alarms}
	// Resources and Namespaces come ranked by bytes.
	for i, g := range r.Resources {
		name := OtherNamespace
		if i < resourceLimit {
			name = textsafe.Escape(g.Name)
		}
		s.Bytes[name] += g.Bytes
		s.Keys[name] += g.Keys
	}
	ranked := slices.Clone(r.Namespaces)
	slices.SortStableFunc(ranked, func(a, b space.Group) int { return cmp.Compare(b.Bytes, a.Bytes) })
	for i, g := range ranked {
		name := OtherNamespace
		if i < namespaceLimit {
			name = textsafe.Escape(g.Name)
		}
		s.Namespaces[name] += g.Bytes
		if g.Ghost.Keys > 0 {
			s.Ghosts[name] += g.Ghost.Bytes
		}
	}
	return s
}

// collectSpace sends the space series of the last good cycle.
func (c *Collector) collectSpace(ch chan<- prometheus.Metric) {
	s := c.space
	if s == nil {
		return
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- constMetric(d, prometheus.GaugeValue, v, labels)
	}
	for res, b := range s.Bytes {
		gauge(descSpaceBytes, float64(b), res)
		gauge(descSpaceKeys, float64(s.Keys[res]), res)
	}
	for ns, b := range s.Namespaces {
		gauge(descSpaceNamespace, float64(b), ns)
	}
	for ns, b := range s.Ghosts {
		gauge(descSpaceGhost, float64(b), ns)
	}
	for _, m := range s.Members {
		if m.Unreachable != "" {
			continue
		}
		gauge(descMemberSize, float64(m.DBSize), m.Name)
		gauge(descMemberInUse, float64(m.DBSizeInUse), m.Name)
		gauge(descMemberFragmented, m.FragmentedShare(), m.Name)
		if m.Quota > 0 {
			gauge(descMemberQuota, float64(m.Quota), m.Name)
		}
	}
	for _, a := range s.Alarms {
		gauge(descAlarm, 1, a.Member, a.Alarm)
	}
}
