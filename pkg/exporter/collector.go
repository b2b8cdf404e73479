package exporter

import (
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/regghost/regghost/pkg/textsafe"
	"github.com/regghost/regghost/pkg/version"
)

// Error reasons of regghost_scan_errors_total: every one is exported from
// the start, at 0, so that rate() and increase() see the first error.
const (
	// ReasonEtcd: etcd could not be reached or read.
	ReasonEtcd = "etcd"
	// ReasonAPI: the API server's discovery failed mid-cycle.
	ReasonAPI = "api"
	// ReasonTimeout: the cycle ran out of --command-timeout.
	ReasonTimeout = "timeout"
	// ReasonScan: anything else the scan refused (a wrong prefix, another cluster).
	ReasonScan = "scan"
)

// Reasons lists every reason of regghost_scan_errors_total.
var Reasons = []string{ReasonEtcd, ReasonAPI, ReasonTimeout, ReasonScan}

var (
	descObjects = prometheus.NewDesc("regghost_objects",
		"Ghost and suspect objects found by the last good scan, by their most severe class (each object counted once).",
		[]string{"class", "resource", "namespace"}, nil)
	descClasses = prometheus.NewDesc("regghost_object_classes",
		"Objects found by the last good scan under every class they carry (an object with two classes counts in both).",
		[]string{"class", "resource", "namespace"}, nil)
	descGhosts = prometheus.NewDesc("regghost_ghosts",
		"Ghosts (objects Kubernetes cannot manage any more) found by the last good scan, by namespace.",
		[]string{"namespace"}, nil)
	descSingle = prometheus.NewDesc("regghost_single_witness_ghosts",
		"Ghosts the API server could not confirm (one witness only), by namespace.",
		[]string{"namespace"}, nil)
	descDangling = prometheus.NewDesc("regghost_dangling_references",
		"References of live objects (APIServices, webhooks, bindings, volumes) into a namespace or Service that is gone or down.",
		[]string{"kind", "state", "target_namespace"}, nil)
	descDanglingAge = prometheus.NewDesc("regghost_dangling_reference_age_seconds",
		"How long the oldest reference of each series has dangled, as of the last good scan: since its APIService's Available condition turned False, else since this exporter first saw it.",
		[]string{"kind", "state", "target_namespace"}, nil)
	descTerminating = prometheus.NewDesc("regghost_namespace_terminating_seconds",
		"How long each namespace has been Terminating (the oldest, for the other bucket).",
		[]string{"namespace"}, nil)
	descTerminatingObjects = prometheus.NewDesc("regghost_namespace_terminating_objects",
		"Keys still stored in each Terminating namespace.",
		[]string{"namespace"}, nil)
	descStored = prometheus.NewDesc("regghost_stored_objects",
		"Objects per resource and stored version, as the last good scan read them from etcd (stored_as: the apiVersion; encrypted <provider>/<key> when not decrypted here; undecodable).",
		[]string{"resource", "stored_as"}, nil)
	descEncryption = prometheus.NewDesc("regghost_encryption_objects",
		"Objects per resource and encryption provider and key (identity: plaintext); writes is true for the key the encryption configuration writes the resource with now, false for an older one (migrate them: regghost migrate RESOURCE), unknown without the configuration.",
		[]string{"resource", "key", "writes"}, nil)
	descCheck = prometheus.NewDesc("regghost_check_done",
		"1 when the last good scan could make the check (a witness, a namespace judgment, a decryption), 0 when it could not.",
		[]string{"check"}, nil)
	descAPIWitness = prometheus.NewDesc("regghost_api_witness",
		"1 when the API server was the second witness of the last good scan.", nil, nil)
	descKeys = prometheus.NewDesc("regghost_keys_scanned",
		"Keys the last good scan read.", nil, nil)
	descRevision = prometheus.NewDesc("regghost_scan_revision",
		"The etcd revision the last good scan read at.", nil, nil)
	descDuration = prometheus.NewDesc("regghost_scan_duration_seconds",
		"How long the last scan cycle took, good or failed.", nil, nil)
	descLastSuccess = prometheus.NewDesc("regghost_last_scan_success_timestamp_seconds",
		"When the last good scan finished, in seconds since the epoch.", nil, nil)
	descLastOK = prometheus.NewDesc("regghost_last_scan_success",
		"1 when the last scan cycle succeeded, 0 when it failed (the other series then hold the last good values).", nil, nil)
	descErrors = prometheus.NewDesc("regghost_scan_errors_total",
		"Scan cycles that failed, by reason.", []string{"reason"}, nil)
	descScans = prometheus.NewDesc("regghost_scans_total",
		"Scan cycles run, good or failed.", nil, nil)
	descCycleRequests = prometheus.NewDesc("regghost_scan_etcd_requests",
		"etcd requests the last scan cycle made.", nil, nil)
	descCycleReceived = prometheus.NewDesc("regghost_scan_etcd_received_bytes",
		"Bytes the last scan cycle received from etcd.", nil, nil)
	descRequests = prometheus.NewDesc("regghost_etcd_requests_total",
		"etcd requests made since start.", nil, nil)
	descReceived = prometheus.NewDesc("regghost_etcd_received_bytes_total",
		"Bytes received from etcd since start.", nil, nil)
	descSent = prometheus.NewDesc("regghost_etcd_sent_bytes_total",
		"Bytes sent to etcd since start.", nil, nil)
	descBuild = prometheus.NewDesc("regghost_build_info",
		"regghost's version, commit and Go version, as a constant 1.", []string{"version", "commit", "goversion"}, nil)
)

// Collector exports the last good snapshot and how the cycles went. Every
// scrape reads one consistent state: a new snapshot replaces the old whole.
type Collector struct {
	meter *EtcdMeter

	mu          sync.Mutex
	snap        *Snapshot
	lastSuccess time.Time
	lastOK      bool
	ran         bool
	duration    time.Duration
	cycleCost   Cost
	scans       int
	errors      map[string]int
	// space is where etcd's bytes were at the last good cycle (MeasureSpace).
	space *SpaceSnapshot
	// leases is what the leases audit found at the last good cycle
	// (AuditLeases).
	leases *LeasesSnapshot
}

// NewCollector returns a collector with nothing scanned yet. meter, when
// not nil, is the shared etcd client's.
func NewCollector(meter *EtcdMeter) *Collector {
	c := &Collector{meter: meter, errors: map[string]int{}}
	for _, r := range Reasons {
		c.errors[r] = 0
	}
	return c
}

// Succeeded records a good cycle: snap replaces every per-finding series.
func (c *Collector) Succeeded(snap *Snapshot, took time.Duration, cost Cost, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.snap, c.lastSuccess, c.lastOK, c.ran = snap, at, true, true
	c.duration, c.cycleCost = took, cost
	c.scans++
}

// Failed records a failed cycle: the last good values stay.
func (c *Collector) Failed(reason string, took time.Duration, cost Cost) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lastOK, c.ran = false, true
	c.duration, c.cycleCost = took, cost
	c.errors[reason]++
	c.scans++
}

// Ready reports whether a cycle has succeeded yet.
func (c *Collector) Ready() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.snap != nil
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descObjects, descClasses, descGhosts, descSingle, descDangling, descDanglingAge, descTerminating,
		descTerminatingObjects, descStored, descEncryption, descCheck, descAPIWitness, descKeys, descRevision, descDuration, descLastSuccess, descLastOK,
		descErrors, descScans, descCycleRequests, descCycleReceived, descRequests, descReceived, descSent, descBuild} {
		ch <- d
	}
	for _, d := range spaceDescs {
		ch <- d
	}
	for _, d := range leasesDescs {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- constMetric(d, prometheus.GaugeValue, v, labels)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- constMetric(d, prometheus.CounterValue, v, labels)
	}
	info := version.Get()
	gauge(descBuild, 1, info.Version, info.Commit, info.GoVersion)
	for _, r := range Reasons {
		counter(descErrors, float64(c.errors[r]), r)
	}
	counter(descScans, float64(c.scans))
	if c.meter != nil {
		t := c.meter.Total()
		counter(descRequests, float64(t.Requests))
		counter(descReceived, float64(t.ReceivedBytes))
		counter(descSent, float64(t.SentBytes))
	}
	if c.ran {
		gauge(descDuration, c.duration.Seconds())
		gauge(descLastOK, b2f(c.lastOK))
		gauge(descCycleRequests, float64(c.cycleCost.Requests))
		gauge(descCycleReceived, float64(c.cycleCost.ReceivedBytes))
	}
	c.collectSpace(ch)
	c.collectLeases(ch)
	s := c.snap
	if s == nil {
		return
	}
	gauge(descLastSuccess, float64(c.lastSuccess.UnixNano())/1e9)
	for k, n := range s.Objects {
		gauge(descObjects, float64(n), string(k.Class), k.Resource, k.Namespace)
	}
	for k, n := range s.Classes {
		gauge(descClasses, float64(n), string(k.Class), k.Resource, k.Namespace)
	}
	for ns, n := range s.Ghosts {
		gauge(descGhosts, float64(n), ns)
	}
	for ns, n := range s.SingleWitness {
		gauge(descSingle, float64(n), ns)
	}
	for k, n := range s.Dangling {
		gauge(descDangling, float64(n), k.Kind, string(k.State), k.TargetNamespace)
		if since, ok := s.DanglingSince[k]; ok {
			gauge(descDanglingAge, max(0, c.lastSuccess.Sub(since).Seconds()), k.Kind, string(k.State), k.TargetNamespace)
		}
	}
	for k, n := range s.Stored {
		gauge(descStored, float64(n), k.Resource, k.StoredAs)
	}
	for k, n := range s.Keys {
		gauge(descEncryption, float64(n), k.Resource, k.Key, k.Writes)
	}
	for ns, sec := range s.Terminating {
		gauge(descTerminating, sec, ns)
		gauge(descTerminatingObjects, float64(s.TerminatingObjects[ns]), ns)
	}
	// A check made in parts is done when every part is.
	done := map[string]bool{}
	for _, chk := range s.Checks {
		if d, ok := done[chk.Name]; ok {
			done[chk.Name] = d && chk.Done
			continue
		}
		done[chk.Name] = chk.Done
	}
	for name, d := range done {
		gauge(descCheck, b2f(d), name)
	}
	gauge(descAPIWitness, b2f(s.APIWitness))
	gauge(descKeys, float64(s.KeysScanned))
	gauge(descRevision, float64(s.Revision))
}

// constMetric is one series, every label value made valid by
// textsafe.Escape: names come from etcd keys and values, and a value that
// is not UTF-8 would fail the whole scrape. Summarize already escapes what
// it counts (so that two names escaping alike are summed, not exported
// twice); escaping here again is a no-op for those and keeps the rule for
// any other source. A series client_golang still refuses is reported as
// invalid: that scrape fails, the collector goes on.
func constMetric(d *prometheus.Desc, t prometheus.ValueType, v float64, labels []string) prometheus.Metric {
	for i, l := range labels {
		labels[i] = textsafe.Escape(l)
	}
	m, err := prometheus.NewConstMetric(d, t, v, labels...)
	if err != nil {
		return prometheus.NewInvalidMetric(d, fmt.Errorf("label values %q: %w", labels, err))
	}
	return m
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
