package exporter

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/regghost/regghost/pkg/etcdscan"
)

// damaged is a report whose names were read from keys and values holding
// bytes that are not UTF-8: two namespaces that differ only in them, a
// resource, a dangling reference's target and a terminating namespace.
func damaged() *etcdscan.Report {
	orphan := etcdscan.ClassOrphanedNamespace
	return &etcdscan.Report{
		ScannedKeys: 5, Revision: 9,
		Findings: []etcdscan.Finding{
			finding("ns-\xff", "pods", true, false, orphan),
			finding("ns-\xff", "pods", true, false, orphan),
			finding("ns-\xfe", "pods", true, true, orphan),
			finding("", "widgets\xc3.example.com", true, false, etcdscan.ClassUnservedType),
		},
		Dangling:    []etcdscan.DanglingRef{{Kind: "APIService", State: etcdscan.DanglingGone, TargetNamespace: "gone-\xff"}},
		Terminating: []etcdscan.TerminatingNamespace{{Name: "term-\x1b[2J\xff", Since: time.Minute, Objects: 2}},
	}
}

// TestDamagedNamesAreScraped: a name that is not UTF-8 reaches its label
// escaped (textsafe.Escape), so the registry gathers every series instead
// of failing the whole scrape, and two names that differ only in their
// invalid bytes stay two series.
func TestDamagedNamesAreScraped(t *testing.T) {
	c := NewCollector(nil)
	c.Succeeded(mustSummarize(t, damaged()), time.Second, Cost{}, time.Unix(100, 0))
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	// Each series' labels as name="value" pairs, the values as they are
	// (no exposition escaping).
	got := map[string][]string{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var pairs []string
			for _, l := range m.GetLabel() {
				pairs = append(pairs, l.GetName()+`="`+l.GetValue()+`"`)
			}
			sort.Strings(pairs)
			got[mf.GetName()] = append(got[mf.GetName()], strings.Join(pairs, ","))
		}
		sort.Strings(got[mf.GetName()])
	}
	tests := []struct {
		metric string
		want   []string
	}{
		{"regghost_ghosts", []string{`namespace=""`, `namespace="ns-\xfe"`, `namespace="ns-\xff"`}},
		{"regghost_single_witness_ghosts", []string{`namespace="ns-\xfe"`}},
		{"regghost_objects", []string{
			`class="orphaned-namespace",namespace="ns-\xfe",resource="pods"`,
			`class="orphaned-namespace",namespace="ns-\xff",resource="pods"`,
			`class="unserved-type",namespace="",resource="widgets\xc3.example.com"`,
		}},
		{"regghost_dangling_references", []string{`kind="APIService",state="gone",target_namespace="gone-\xff"`}},
		{"regghost_namespace_terminating_seconds", []string{`namespace="term-\u001b[2J\xff"`}},
	}
	for _, tt := range tests {
		t.Run(tt.metric, func(t *testing.T) {
			if strings.Join(got[tt.metric], "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("series:\n got %q\nwant %q", got[tt.metric], tt.want)
			}
		})
	}
}

// TestCollectEscapesEveryLabel: the collector escapes every label value it
// exports, whoever built the snapshot, and /metrics answers 200.
func TestCollectEscapesEveryLabel(t *testing.T) {
	key := ObjectKey{Class: "orphaned-namespace\xff", Resource: "pods\xfe", Namespace: "ns-\xff"}
	dk := DanglingKey{Kind: "APIService\xff", State: etcdscan.DanglingGone, TargetNamespace: "gone-\xff"}
	snap := &Snapshot{
		Objects: map[ObjectKey]int{key: 1}, Classes: map[ObjectKey]int{key: 1},
		Ghosts: map[string]int{"ns-\xff": 1, "ns-\xfe": 2}, SingleWitness: map[string]int{"ns-\xff": 1},
		Dangling: map[DanglingKey]int{dk: 1}, DanglingSince: map[DanglingKey]time.Time{dk: time.Unix(50, 0)},
		Terminating: map[string]float64{"term-\xff": 60}, TerminatingObjects: map[string]int{"term-\xff": 2},
		Checks: []CheckState{{Name: "check\xff", Done: true}},
	}
	c := NewCollector(nil)
	c.Succeeded(snap, time.Second, Cost{}, time.Unix(100, 0))
	if got, want := samples(t, c, "regghost_ghosts"), "regghost_ghosts{namespace=\"ns-\\\\xfe\"} 2\nregghost_ghosts{namespace=\"ns-\\\\xff\"} 1"; got != want {
		t.Errorf("regghost_ghosts:\n got %s\nwant %s", got, want)
	}
	srv := httptest.NewServer(Handler(Registry(c), c))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics answered %s: %s", resp.Status, body)
	}
	for _, want := range []string{
		`regghost_objects{class="orphaned-namespace\\xff",namespace="ns-\\xff",resource="pods\\xfe"} 1`,
		`regghost_dangling_reference_age_seconds{kind="APIService\\xff",state="gone",target_namespace="gone-\\xff"} 50`,
		`regghost_namespace_terminating_objects{namespace="term-\\xff"} 2`,
		`regghost_check_done{check="check\\xff"} 1`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestNamesEscapingAlikeAreSummed: a valid name that spells out an escape
// (`ns-\xff`) and the invalid name it stands for are one label value; they
// are counted as one series, not exported twice (a duplicate series fails
// the scrape too).
func TestNamesEscapingAlikeAreSummed(t *testing.T) {
	orphan := etcdscan.ClassOrphanedNamespace
	rep := &etcdscan.Report{Findings: []etcdscan.Finding{
		finding("ns-\xff", "pods", true, false, orphan),
		finding(`ns-\xff`, "pods", true, false, orphan),
	}}
	c := NewCollector(nil)
	c.Succeeded(mustSummarize(t, rep), time.Second, Cost{}, time.Unix(100, 0))
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	if _, err := reg.Gather(); err != nil {
		t.Fatalf("Gather: %v", err)
	}
	if got, want := samples(t, c, "regghost_ghosts"), `regghost_ghosts{namespace="ns-\\xff"} 2`; got != want {
		t.Errorf("regghost_ghosts:\n got %s\nwant %s", got, want)
	}
}
