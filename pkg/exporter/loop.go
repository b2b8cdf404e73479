package exporter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/regghost/regghost/pkg/etcdscan"
)

// CycleError is a failed cycle with the reason it is counted under.
type CycleError struct {
	Reason string
	Err    error
}

func (e *CycleError) Error() string { return e.Err.Error() }
func (e *CycleError) Unwrap() error { return e.Err }

// ReasonOf returns the reason a cycle error is counted under: a
// CycleError's own, else timeout for a deadline, else scan.
func ReasonOf(err error) string {
	var ce *CycleError
	if errors.As(err, &ce) {
		return ce.Reason
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return ReasonTimeout
	}
	return ReasonScan
}

// Loop runs a scan every Interval, with jitter, and hands each result to
// Collector. It never stops on a failed cycle: the error is counted and
// logged and the last good values stay.
type Loop struct {
	// Scan runs one cycle. It must only read.
	Scan func(ctx context.Context) (*etcdscan.Report, error)
	// Interval is the wait from the end of one cycle to the start of the
	// next, so cycles never overlap and etcd gets its pause; Jitter is the
	// largest fraction of it added or taken away at random (0.1: ±10%).
	Interval time.Duration
	Jitter   float64
	// Timeout bounds one cycle.
	Timeout time.Duration
	// NamespaceLimit caps the namespace label values (see Summarize).
	NamespaceLimit int
	Collector      *Collector
	// Meter, when set, is the shared etcd client's: each cycle's cost is
	// what it counted during the cycle.
	Meter *EtcdMeter
	Log   *slog.Logger
	// dangling dates the dangling references across cycles.
	dangling danglingClock
}

// Run runs cycles until ctx is done, the first one at once.
func (l *Loop) Run(ctx context.Context) {
	for {
		_ = l.Once(ctx) // counted and logged; the loop goes on
		t := time.NewTimer(l.next())
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// next is the wait before the next cycle.
func (l *Loop) next() time.Duration {
	j := l.Jitter * (2*rand.Float64() - 1)
	return time.Duration(float64(l.Interval) * (1 + j))
}

// scan runs l.Scan, a panic in it turned into the cycle's error: the
// exporter outlives a scan's bug.
func (l *Loop) scan(ctx context.Context) (rep *etcdscan.Report, err error) {
	defer func() {
		if r := recover(); r != nil {
			rep, err = nil, &CycleError{Reason: ReasonScan, Err: fmt.Errorf("scan panicked: %v", r)}
		}
	}()
	return l.Scan(ctx)
}

// Once runs one cycle and records it.
func (l *Loop) Once(ctx context.Context) error {
	var before Cost
	if l.Meter != nil {
		before = l.Meter.Total()
	}
	start := time.Now()
	cctx, cancel := context.WithTimeout(ctx, l.Timeout)
	rep, err := l.scan(cctx)
	if err != nil && ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
		// The cycle's own deadline, whatever shape the error took on the
		// way (a rate limiter's, gRPC's DeadlineExceeded).
		err = &CycleError{Reason: ReasonTimeout, Err: err}
	}
	cancel()
	took := time.Since(start)
	var cost Cost
	if l.Meter != nil {
		cost = l.Meter.Total().Sub(before)
	}
	if err != nil {
		if ctx.Err() != nil {
			// Shutting down: not a failure of the cycle.
			return ctx.Err()
		}
		reason := ReasonOf(err)
		l.Collector.Failed(reason, took, cost)
		l.Log.Error("scan failed; the metrics keep the last good values", "reason", reason, "err", err.Error(), "took", took.Round(time.Millisecond).String())
		return fmt.Errorf("scan cycle: %w", err)
	}
	findings := rep.Len()
	end := time.Now()
	l.dangling.date(rep.Dangling, end)
	snap, err := Summarize(rep, l.NamespaceLimit)
	// The counts are all a cycle keeps: a report's spill file goes now.
	rep.Close()
	if err != nil {
		l.Collector.Failed(ReasonScan, took, cost)
		l.Log.Error("scan failed; the metrics keep the last good values", "reason", ReasonScan, "err", err.Error(), "took", took.Round(time.Millisecond).String())
		return fmt.Errorf("scan cycle: %w", err)
	}
	l.Collector.Succeeded(snap, took, cost, end)
	ghosts := 0
	for _, n := range snap.Ghosts {
		ghosts += n
	}
	l.Log.Info("scan done", "revision", rep.Revision, "keys", rep.ScannedKeys, "findings", findings, "ghosts", ghosts,
		"dangling", len(rep.Dangling), "took", took.Round(time.Millisecond).String(), "etcd_requests", cost.Requests, "etcd_received_bytes", cost.ReceivedBytes)
	return nil
}
