package exporter

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"github.com/regghost/regghost/pkg/etcdscan"
)

func finding(ns, resource string, ghost, single bool, classes ...etcdscan.Class) etcdscan.Finding {
	return etcdscan.Finding{Namespace: ns, Resource: resource, Classes: classes, Ghost: ghost, SingleWitness: single}
}

func TestSummarize(t *testing.T) {
	orphan, stuck := etcdscan.ClassOrphanedNamespace, etcdscan.ClassStuckTerminating
	unavailable := time.Unix(1000, 0)
	rep := &etcdscan.Report{
		ScannedKeys: 42, Revision: 7, APIWitness: true,
		Findings: []etcdscan.Finding{
			finding("kb-system", "pods", true, false, orphan, stuck),
			finding("kb-system", "pods", true, false, orphan),
			finding("kb-system", "configmaps", true, true, orphan),
			finding("small", "pods", false, false, stuck),
			finding("", "widgets.example.com", true, false, etcdscan.ClassUnservedType),
		},
		Dangling: []etcdscan.DanglingRef{
			{Kind: "APIService", State: etcdscan.DanglingGone, TargetNamespace: "kb-system", Since: &unavailable},
			{Kind: "APIService", State: etcdscan.DanglingGone, TargetNamespace: "kb-system"},
			{Kind: "ClusterRoleBinding", State: etcdscan.DanglingGone, TargetNamespace: "gone-2"},
		},
		Terminating: []etcdscan.TerminatingNamespace{{Name: "small", Since: 90 * time.Second, Objects: 3}},
		Checks:      []etcdscan.Check{{Name: "api server witness", Done: true}, {Name: "namespaces", Done: false}},
		Versions: []etcdscan.StoredVersions{
			{Resource: "secrets", Stored: map[string]int{"v1": 5}, Keys: map[string]int{"aescbc/key2": 3, "aescbc/key1": 2}, Writer: "aescbc/key2"},
			{Resource: "widgets.example.com", Stored: map[string]int{"example.com/v1": 1, "encrypted kms/p": 1}, Keys: map[string]int{"identity": 1, "kms v2/p": 1}},
			// A KMS v2 plugin rotated its key: each key ID is a key of its own.
			{Resource: "configmaps", Stored: map[string]int{"encrypted kms/p": 11}, Keys: map[string]int{"kms v2/p (key ID 1)": 4, "kms v2/p (key ID 2)": 6,
				"kms v2/p (key ID unreadable)": 1}, Writer: "kms v2/p", WriterKeyID: "2"},
			// The plugin did not say its key ID: which of its key IDs
			// writes is not known, another key still does not write.
			{Resource: "leases.coordination.k8s.io", Stored: map[string]int{"encrypted kms/q": 1, "coordination.k8s.io/v1": 1},
				Keys: map[string]int{"kms v2/q (key ID 1)": 1, "aescbc/key1": 1}, Writer: "kms v2/q", WriterKeyIDUnknown: "connect to KMS plugin"},
		},
	}
	stored := map[StoredKey]int{{"secrets", "v1"}: 5, {"widgets.example.com", "example.com/v1"}: 1, {"widgets.example.com", "encrypted kms/p"}: 1,
		{"configmaps", "encrypted kms/p"}: 11, {"leases.coordination.k8s.io", "encrypted kms/q"}: 1, {"leases.coordination.k8s.io", "coordination.k8s.io/v1"}: 1}
	keys := map[KeyKey]int{{"secrets", "aescbc/key2", "true"}: 3, {"secrets", "aescbc/key1", "false"}: 2,
		{"widgets.example.com", "identity", "unknown"}: 1, {"widgets.example.com", "kms v2/p", "unknown"}: 1,
		{"configmaps", "kms v2/p (key ID 1)", "false"}: 4, {"configmaps", "kms v2/p (key ID 2)", "true"}: 6, {"configmaps", "kms v2/p (key ID unreadable)", "unknown"}: 1,
		{"leases.coordination.k8s.io", "kms v2/q (key ID 1)", "unknown"}: 1, {"leases.coordination.k8s.io", "aescbc/key1", "false"}: 1}
	tests := []struct {
		name  string
		limit int
		want  *Snapshot
	}{
		{name: "every namespace named", limit: 10, want: &Snapshot{
			Objects: map[ObjectKey]int{
				{orphan, "pods", "kb-system"}: 2, {orphan, "configmaps", "kb-system"}: 1,
				{stuck, "pods", "small"}: 1, {etcdscan.ClassUnservedType, "widgets.example.com", ""}: 1,
			},
			Classes: map[ObjectKey]int{
				{orphan, "pods", "kb-system"}: 2, {stuck, "pods", "kb-system"}: 1, {orphan, "configmaps", "kb-system"}: 1,
				{stuck, "pods", "small"}: 1, {etcdscan.ClassUnservedType, "widgets.example.com", ""}: 1,
			},
			Ghosts:        map[string]int{"kb-system": 3, "": 1},
			SingleWitness: map[string]int{"kb-system": 1},
			Dangling: map[DanglingKey]int{
				{"APIService", etcdscan.DanglingGone, "kb-system"}: 2, {"ClusterRoleBinding", etcdscan.DanglingGone, "gone-2"}: 1,
			},
			DanglingSince:      map[DanglingKey]time.Time{{"APIService", etcdscan.DanglingGone, "kb-system"}: unavailable},
			Terminating:        map[string]float64{"small": 90},
			TerminatingObjects: map[string]int{"small": 3},
			Checks:             []CheckState{{"api server witness", true}, {"namespaces", false}},
			APIWitness:         true, KeysScanned: 42, Revision: 7, Stored: stored, Keys: keys,
		}},
		{name: "one namespace named, the rest other", limit: 1, want: &Snapshot{
			Objects: map[ObjectKey]int{
				{orphan, "pods", "kb-system"}: 2, {orphan, "configmaps", "kb-system"}: 1,
				{stuck, "pods", OtherNamespace}: 1, {etcdscan.ClassUnservedType, "widgets.example.com", ""}: 1,
			},
			Classes: map[ObjectKey]int{
				{orphan, "pods", "kb-system"}: 2, {stuck, "pods", "kb-system"}: 1, {orphan, "configmaps", "kb-system"}: 1,
				{stuck, "pods", OtherNamespace}: 1, {etcdscan.ClassUnservedType, "widgets.example.com", ""}: 1,
			},
			Ghosts:        map[string]int{"kb-system": 3, "": 1},
			SingleWitness: map[string]int{"kb-system": 1},
			Dangling: map[DanglingKey]int{
				{"APIService", etcdscan.DanglingGone, "kb-system"}: 2, {"ClusterRoleBinding", etcdscan.DanglingGone, OtherNamespace}: 1,
			},
			DanglingSince:      map[DanglingKey]time.Time{{"APIService", etcdscan.DanglingGone, "kb-system"}: unavailable},
			Terminating:        map[string]float64{OtherNamespace: 90},
			TerminatingObjects: map[string]int{OtherNamespace: 3},
			Checks:             []CheckState{{"api server witness", true}, {"namespaces", false}},
			APIWitness:         true, KeysScanned: 42, Revision: 7, Stored: stored, Keys: keys,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Summarize(rep, tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Summarize:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestCollectorKeepsLastGoodValues: a failed cycle counts its error and
// leaves the last good snapshot; the next good one replaces it whole.
func TestCollectorKeepsLastGoodValues(t *testing.T) {
	c := NewCollector(nil)
	if c.Ready() {
		t.Fatal("ready before any scan")
	}
	ghosts := &etcdscan.Report{Findings: []etcdscan.Finding{finding("kb-system", "pods", true, false, etcdscan.ClassOrphanedNamespace)}}
	steps := []struct {
		name string
		do   func()
		want string
	}{
		{name: "good cycle with a ghost", do: func() { c.Succeeded(mustSummarize(t, ghosts), time.Second, Cost{}, time.Unix(100, 0)) }, want: `
regghost_last_scan_success 1
regghost_last_scan_success_timestamp_seconds 100
regghost_objects{class="orphaned-namespace",namespace="kb-system",resource="pods"} 1
regghost_scan_errors_total{reason="api"} 0
regghost_scan_errors_total{reason="etcd"} 0
regghost_scan_errors_total{reason="scan"} 0
regghost_scan_errors_total{reason="timeout"} 0
`},
		{name: "failed cycle keeps it", do: func() { c.Failed(ReasonEtcd, time.Second, Cost{}) }, want: `
regghost_last_scan_success 0
regghost_last_scan_success_timestamp_seconds 100
regghost_objects{class="orphaned-namespace",namespace="kb-system",resource="pods"} 1
regghost_scan_errors_total{reason="api"} 0
regghost_scan_errors_total{reason="etcd"} 1
regghost_scan_errors_total{reason="scan"} 0
regghost_scan_errors_total{reason="timeout"} 0
`},
		{name: "good cycle after purge drops the series", do: func() { c.Succeeded(mustSummarize(t, &etcdscan.Report{}), time.Second, Cost{}, time.Unix(200, 0)) }, want: `
regghost_last_scan_success 1
regghost_last_scan_success_timestamp_seconds 200
regghost_scan_errors_total{reason="api"} 0
regghost_scan_errors_total{reason="etcd"} 1
regghost_scan_errors_total{reason="scan"} 0
regghost_scan_errors_total{reason="timeout"} 0
`},
	}
	for _, s := range steps {
		s.do()
		names := []string{"regghost_objects", "regghost_scan_errors_total", "regghost_last_scan_success", "regghost_last_scan_success_timestamp_seconds"}
		if got := samples(t, c, names...); got != strings.TrimSpace(s.want) {
			t.Errorf("%s:\n got:\n%s\nwant:\n%s", s.name, got, strings.TrimSpace(s.want))
		}
		if !c.Ready() {
			t.Errorf("%s: not ready after a good cycle", s.name)
		}
	}
}

// samples is the text exposition of the named metrics without its HELP and
// TYPE lines.
func samples(t *testing.T, c *Collector, names ...string) string {
	t.Helper()
	out, err := testutil.CollectAndFormat(c, expfmt.TypeTextPlain, names...)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

// mustSummarize is Summarize with a limit of 10 namespaces, or the test fails.
func mustSummarize(t *testing.T, rep *etcdscan.Report) *Snapshot {
	t.Helper()
	s, err := Summarize(rep, 10)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestBoundKeyIDs: a plugin whose key rotated many times, never migrated,
// keeps the key ID it writes with, an unreadable envelope's and the
// fullest, and sums the rest under "(other key IDs)", a key that does not
// write; a plugin within the bound and other keys are untouched.
func TestBoundKeyIDs(t *testing.T) {
	v := etcdscan.StoredVersions{Resource: "secrets", Writer: "kms v2/p", WriterKeyID: "9", Keys: map[string]int{
		"kms v2/p (key ID 1)": 50, "kms v2/p (key ID 2)": 40, "kms v2/p (key ID 3)": 1, "kms v2/p (key ID 4)": 2,
		"kms v2/p (key ID 5)": 3, "kms v2/p (key ID 9)": 1, "kms v2/p (key ID unreadable)": 1,
		"kms v2/q (key ID 1)": 7, "aescbc/key1": 5}}
	want := map[string]int{"kms v2/p (key ID 9)": 1, "kms v2/p (key ID unreadable)": 1, "kms v2/p (key ID 1)": 50, "kms v2/p (key ID 2)": 40,
		"kms v2/p (other key IDs)": 6, "kms v2/q (key ID 1)": 7, "aescbc/key1": 5}
	got := boundKeyIDs(v, 5)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("bound key IDs:\n%v\nwant\n%v", got, want)
	}
	if w := v.Writes("kms v2/p (other key IDs)"); w != "false" {
		t.Errorf("other key IDs write: %s", w)
	}
	// The plugin did not say its key ID: the ones counted together may
	// hold the one it writes with.
	v.WriterKeyID = ""
	if w := v.Writes("kms v2/p (other key IDs)"); w != "unknown" {
		t.Errorf("other key IDs of a plugin that did not answer write: %s", w)
	}
	if w := v.Writes("kms v2/q (key ID 1)"); w != "false" {
		t.Errorf("another plugin's key ID writes: %s", w)
	}
}
