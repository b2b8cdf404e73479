package exporter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/regghost/regghost/pkg/etcdscan"
)

// TestLoopKeepsServingAfterFailures: cycles that fail (etcd down, a
// deadline, the API server) are counted under their reason and leave the
// last good values; the loop goes on and the next good cycle replaces them.
func TestLoopKeepsServingAfterFailures(t *testing.T) {
	good := &etcdscan.Report{Findings: []etcdscan.Finding{finding("kb-system", "pods", true, false, etcdscan.ClassOrphanedNamespace)}}
	purged := &etcdscan.Report{}
	steps := []struct {
		rep        *etcdscan.Report
		err        error
		wantReason string
		wantLine   string
	}{
		{rep: good, wantLine: `regghost_objects{class="orphaned-namespace",namespace="kb-system",resource="pods"} 1`},
		{err: &CycleError{Reason: ReasonEtcd, Err: errors.New("etcd down")}, wantReason: ReasonEtcd,
			wantLine: `regghost_objects{class="orphaned-namespace",namespace="kb-system",resource="pods"} 1`},
		{err: fmt.Errorf("scan: %w", context.DeadlineExceeded), wantReason: ReasonTimeout,
			wantLine: `regghost_objects{class="orphaned-namespace",namespace="kb-system",resource="pods"} 1`},
		{err: &CycleError{Reason: ReasonAPI, Err: errors.New("discovery failed")}, wantReason: ReasonAPI,
			wantLine: `regghost_objects{class="orphaned-namespace",namespace="kb-system",resource="pods"} 1`},
		{err: errors.New("prefix /registry/ holds another cluster"), wantReason: ReasonScan,
			wantLine: `regghost_objects{class="orphaned-namespace",namespace="kb-system",resource="pods"} 1`},
		{rep: purged, wantLine: ""},
	}
	i := 0
	c := NewCollector(nil)
	l := &Loop{Collector: c, Timeout: time.Minute, NamespaceLimit: 10, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Scan: func(context.Context) (*etcdscan.Report, error) { return steps[i].rep, steps[i].err }}
	errs := map[string]int{}
	for ; i < len(steps); i++ {
		s := steps[i]
		err := l.Once(context.Background())
		if (err != nil) != (s.err != nil) {
			t.Fatalf("step %d: Once returned %v", i, err)
		}
		if s.wantReason != "" {
			errs[s.wantReason]++
		}
		got := samples(t, c, "regghost_objects")
		if got != s.wantLine {
			t.Errorf("step %d: regghost_objects:\n%s\nwant:\n%s", i, got, s.wantLine)
		}
		for _, r := range Reasons {
			want := fmt.Sprintf(`regghost_scan_errors_total{reason=%q} %d`, r, errs[r])
			if got := samples(t, c, "regghost_scan_errors_total"); !containsLine(got, want) {
				t.Errorf("step %d: want %s in\n%s", i, want, got)
			}
		}
	}
}

func containsLine(text, line string) bool {
	for _, l := range strings.Split(text, "\n") {
		if l == line {
			return true
		}
	}
	return false
}

// TestLoopReasonsOfRealFailures: a cycle that runs out of its own time is
// a timeout whatever error the scan returned (a rate limiter's, gRPC's),
// and a scan that panics fails its cycle instead of the exporter.
func TestLoopReasonsOfRealFailures(t *testing.T) {
	steps := []struct {
		name string
		scan func(ctx context.Context) (*etcdscan.Report, error)
		want string
	}{
		{"the cycle's deadline, seen by a rate limiter", func(ctx context.Context) (*etcdscan.Report, error) {
			<-ctx.Done()
			return nil, errors.New("rate: Wait(n=640) would exceed context deadline")
		}, ReasonTimeout},
		{"a panic", func(context.Context) (*etcdscan.Report, error) { panic("a bug") }, ReasonScan},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			c := NewCollector(nil)
			l := &Loop{Collector: c, Timeout: 10 * time.Millisecond, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Scan: s.scan}
			if err := l.Once(context.Background()); err == nil {
				t.Fatal("the cycle did not fail")
			}
			want := fmt.Sprintf(`regghost_scan_errors_total{reason=%q} 1`, s.want)
			if got := samples(t, c, "regghost_scan_errors_total"); !containsLine(got, want) {
				t.Errorf("want %s in\n%s", want, got)
			}
		})
	}
}
