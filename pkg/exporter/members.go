package exporter

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/regghost/regghost/pkg/members"
	"github.com/regghost/regghost/pkg/textsafe"
)

var (
	descMembersAgree = prometheus.NewDesc("regghost_etcd_members_agree",
		"1 when the last comparison of etcd's members found them agreeing (hashes, and keys where compared), 0 when they differ; absent before the first comparison or when it could not tell.", nil, nil)
	descMembersOK = prometheus.NewDesc("regghost_etcd_members_comparison_ok",
		"1 when the last comparison of etcd's members ran to the end (every member answered), else 0.", nil, nil)
	descMembersLast = prometheus.NewDesc("regghost_etcd_members_last_comparison_timestamp_seconds",
		"When the last comparison of etcd's members ended (Unix time).", nil, nil)
	descMembersHashRevision = prometheus.NewDesc("regghost_etcd_members_hash_revision",
		"The revision every member's HashKV was taken at in the last comparison (the lowest current revision of the members).", nil, nil)
	descMemberRevision = prometheus.NewDesc("regghost_etcd_member_revision",
		"Each etcd member's current revision at the last comparison.", []string{"member"}, nil)
	descMemberHash = prometheus.NewDesc("regghost_etcd_member_hash",
		"Each etcd member's HashKV at regghost_etcd_members_hash_revision (a 32-bit hash as a number: members that agree share it).", []string{"member"}, nil)
	descMemberDiffering = prometheus.NewDesc("regghost_etcd_member_differing_keys",
		"Keys on which each etcd member differs from the majority's copy at the last comparison (missing, extra, another value or revision).", []string{"member"}, nil)
	descMemberWrong = prometheus.NewDesc("regghost_etcd_member_wrong",
		"1 for the member the last comparison named wrong by a quorum (regghost members replace brings it back), 0 for the others.", []string{"member"}, nil)
	descMemberUp = prometheus.NewDesc("regghost_etcd_member_up",
		"1 when the etcd member answered its Status at the last comparison, 0 when it did not (it is then not compared).", []string{"member"}, nil)
	descMemberLastAnswered = prometheus.NewDesc("regghost_etcd_member_last_answered_timestamp_seconds",
		"When the etcd member last answered a comparison (Unix time), kept while it does not answer: its last known state.", []string{"member"}, nil)
	descMemberLastRevision = prometheus.NewDesc("regghost_etcd_member_last_known_revision",
		"The etcd member's revision when it last answered a comparison: its last known state.", []string{"member"}, nil)
	descMemberBehind = prometheus.NewDesc("regghost_etcd_member_behind_entries",
		"Raft entries the etcd member had not applied, after being given the interval to catch up, at the last comparison (0: caught up; absent while it does not answer). A member behind is not compared and never named wrong.", []string{"member"}, nil)
)

// lastKnown is what a member last said, kept across comparisons.
type lastKnown struct {
	at       time.Time
	revision int64
}

// MembersWatch compares etcd's members every Interval (members.Compare:
// hashes first, keys when they disagree) and serves the last comparison.
type MembersWatch struct {
	Compare  func(ctx context.Context) (*members.Report, error)
	Interval time.Duration
	Log      *slog.Logger

	mu   sync.Mutex
	rep  *members.Report
	ok   bool
	at   time.Time
	ran  bool
	last map[string]lastKnown
}

// Run compares until ctx ends, the first time at once; on kine (no
// members) it stops at once and serves nothing.
func (w *MembersWatch) Run(ctx context.Context) {
	for {
		if err := w.Once(ctx); errors.Is(err, members.ErrNotEtcd) {
			if w.Log != nil {
				w.Log.Info("no etcd members to compare", "reason", err.Error())
			}
			w.mu.Lock()
			w.ran = false
			w.mu.Unlock()
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(w.Interval):
		}
	}
}

// Once compares the members once and keeps the result; a comparison that
// fails keeps the last good one's series and sets comparison_ok to 0.
func (w *MembersWatch) Once(ctx context.Context) error {
	start := time.Now()
	rep, err := w.Compare(ctx)
	took := time.Since(start).Round(time.Millisecond)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ran, w.at = true, time.Now()
	if err != nil {
		w.ok = false
		if w.Log != nil && !errors.Is(err, members.ErrNotEtcd) {
			w.Log.Warn("members comparison failed", "error", err.Error(), "took", took)
		}
		return err
	}
	w.rep, w.ok = rep, !rep.Incomplete() && !rep.Verdict.Unknown
	if w.last == nil {
		w.last = map[string]lastKnown{}
	}
	for _, m := range rep.Members {
		if m.Unreachable == "" && m.Revision > 0 {
			w.last[m.Name] = lastKnown{at: w.at, revision: m.Revision}
		}
	}
	switch {
	case w.Log == nil:
	case rep.Differ():
		w.Log.Warn("etcd's members differ", "wrong", rep.Verdict.Wrong, "reason", rep.Verdict.Reason, "took", took)
	default:
		w.Log.Info("members compared", "agree", rep.Verdict.Agree, "unknown", rep.Verdict.Unknown, "reason", rep.Verdict.Reason,
			"behind", rep.Verdict.Behind, "not_compared", rep.Verdict.NotCompared, "took", took)
	}
	return nil
}

// Describe implements prometheus.Collector.
func (w *MembersWatch) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descMembersAgree, descMembersOK, descMembersLast, descMembersHashRevision,
		descMemberRevision, descMemberHash, descMemberDiffering, descMemberWrong, descMemberUp, descMemberLastAnswered, descMemberLastRevision,
		descMemberBehind} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (w *MembersWatch) Collect(ch chan<- prometheus.Metric) {
	w.mu.Lock()
	defer w.mu.Unlock()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- constMetric(d, prometheus.GaugeValue, v, labels)
	}
	if !w.ran {
		return
	}
	gauge(descMembersOK, b2f(w.ok))
	gauge(descMembersLast, float64(w.at.Unix()))
	r := w.rep
	if r == nil {
		return
	}
	if !r.Verdict.Unknown {
		gauge(descMembersAgree, b2f(r.Verdict.Agree))
	}
	wrong := map[string]bool{}
	for _, m := range r.Verdict.Wrong {
		wrong[m] = true
	}
	differing := map[string]int64{}
	for _, g := range r.Keys.Groups {
		if g.Member != "" {
			differing[g.Member] += g.Keys
		}
	}
	if n := len(r.Samples); n > 0 {
		s := r.Samples[n-1]
		if s.Comparable {
			gauge(descMembersHashRevision, float64(s.Revision))
		}
		for _, m := range s.Members {
			name := textsafe.Escape(m.Member)
			if m.Error != "" {
				continue
			}
			gauge(descMemberRevision, float64(m.Revision), name)
			if h, err := strconv.ParseUint(m.Hash, 16, 32); err == nil && s.Comparable {
				gauge(descMemberHash, float64(h), name)
			}
		}
	}
	for _, m := range r.Members {
		if m.Learner {
			continue
		}
		name := textsafe.Escape(m.Name)
		gauge(descMemberDiffering, float64(differing[m.Name]), name)
		gauge(descMemberWrong, b2f(wrong[m.Name]), name)
		gauge(descMemberUp, b2f(m.Unreachable == ""), name)
		// A member that did not answer is not said caught up (0): how far
		// it trails is not known.
		if m.Unreachable == "" {
			var behind float64
			if m.Behind != nil {
				behind = float64(m.Behind.Entries)
			}
			gauge(descMemberBehind, behind, name)
		}
		if l, ok := w.last[m.Name]; ok {
			gauge(descMemberLastAnswered, float64(l.at.Unix()), name)
			gauge(descMemberLastRevision, float64(l.revision), name)
		}
	}
}
