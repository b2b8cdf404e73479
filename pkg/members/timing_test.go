package members

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/etcdwrite"
)

// TestTiming: the comparison after the promotion is planned at the longer
// of what the one before took and each member's keys at the pace, and a
// quarter more; when that is more than a step has, a --command-timeout
// (whole minutes) and, when the pace is what binds, a
// --max-keys-per-second are named that fit.
func TestTiming(t *testing.T) {
	const min = time.Minute
	for _, tt := range []struct {
		name      string
		keys      int64
		perSecond int
		took      time.Duration
		timeout   time.Duration
		fits      bool
		fitTO     float64
		fitPace   int
	}{
		{"a small keyspace", 20000, 25000, 2 * time.Second, 5 * min, true, 0, 0},
		// issue 51: 7.5M keys at the default pace fill the default
		// --command-timeout, with nothing to spare.
		{"7.5M keys at 25000 a second in 5m", 7_500_000, 25000, 290 * time.Second, 5 * min, false, 7 * 60, 32000},
		{"the pace binds", 6_500_000, 25000, 265 * time.Second, 5 * min, false, 6 * 60, 28000},
		{"it took most of the step, whatever the pace", 1000, 25000, 250 * time.Second, 5 * min, false, 6 * 60, 0},
		{"unpaced, measured only", 9_000_000, 0, 250 * time.Second, 5 * min, false, 6 * 60, 0},
		{"unpaced, within", 9_000_000, 0, 3 * min, 5 * min, true, 0, 0},
		{"exactly a quarter to spare", 100_000, 1000, 100 * time.Second, 125 * time.Second, true, 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := timing(tt.keys, tt.perSecond, tt.took, tt.timeout)
			if got.Fits != tt.fits || got.FitTimeout != tt.fitTO || got.FitPerSecond != tt.fitPace {
				t.Fatalf("timing: %+v; want fits %v, --command-timeout %vs, --max-keys-per-second %d", got, tt.fits, tt.fitTO, tt.fitPace)
			}
			if got.Fits {
				return
			}
			// What it names fits when run with it.
			if again := timing(tt.keys, tt.perSecond, tt.took, time.Duration(got.FitTimeout)*time.Second); !again.Fits {
				t.Errorf("--command-timeout %vs does not fit: %+v", got.FitTimeout, again)
			}
			if got.FitPerSecond > 0 {
				rest := max(tt.took-time.Duration(float64(tt.keys)/float64(tt.perSecond)*float64(time.Second)), 0)
				took := rest + time.Duration(float64(tt.keys)/float64(got.FitPerSecond)*float64(time.Second))
				if again := timing(tt.keys, got.FitPerSecond, took, tt.timeout); !again.Fits {
					t.Errorf("--max-keys-per-second %d does not fit: %+v", got.FitPerSecond, again)
				}
			}
		})
	}
}

// steppingClock is a clock that moves by step each time it is read.
func steppingClock(step time.Duration) func() time.Time {
	var mu sync.Mutex
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(step)
		return now
	}
}

// TestReplaceRefusesWhatWouldRunOutOfTime: a comparison that takes more of
// a step than leaves a quarter to spare (the clock says it took a
// minute, the step has one), or one that does not finish within a step,
// is refused in the plan, dry run and confirmed run alike, naming the
// flags that would fit, before anything is written: the comparison after
// the promotion would run out once the member is out.
func TestReplaceRefusesWhatWouldRunOutOfTime(t *testing.T) {
	c := startCluster(t, 3)
	ctx := context.Background()
	for i := 0; i < 20; i++ {
		etcdtest.Put(t, c.cli, fmt.Sprintf("/registry/configmaps/default/cm-%d", i), configMap(t, fmt.Sprintf("cm-%d", i), "v1"))
	}
	w := c.follower(t)
	c.edit(t, w, dropKey("/registry/configmaps/default/cm-3"))
	t.Setenv(etcdwrite.LockDirEnv, t.TempDir())
	before, err := c.cli.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		step    time.Duration
		clock   func() time.Time
		confirm bool
		want    []string
	}{
		{"it took the whole step: dry run", time.Minute, steppingClock(time.Minute), false,
			[]string{"it took 1m0s", "planned at 1m15s", "more than the --command-timeout 1m each step has", "run with --command-timeout 2m"}},
		{"it took the whole step: confirmed", time.Minute, steppingClock(time.Minute), true,
			[]string{"run with --command-timeout 2m"}},
		{"it did not finish in a step", time.Nanosecond, nil, false,
			[]string{"comparing the members did not finish within the --command-timeout 1ns each step has", "a longer --command-timeout"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			o := ReplaceOptions{Compare: c.options(), Member: c.names[w], EvidenceRoot: root, StepTimeout: tt.step, Now: tt.clock, Confirm: tt.confirm}
			res, err := Replace(ctx, o)
			if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "nothing was changed") {
				t.Fatalf("Replace: %v, want refused", err)
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the refusal misses %q: %v", want, err)
				}
			}
			if tt.clock != nil && (res == nil || res.Timing == nil || res.Timing.Fits || res.Timing.FitTimeout != 120) {
				t.Errorf("the plan's timing: %+v", res)
			}
			if entries, _ := os.ReadDir(root); len(entries) != 0 {
				t.Errorf("a refused replacement wrote %v", entries)
			}
			after, err := c.cli.MemberList(ctx)
			if err != nil || len(after.Members) != len(before.Members) {
				t.Errorf("the member list changed: %v, %v", after, err)
			}
		})
	}

	// Given the time, the same plan fits and says so.
	o := ReplaceOptions{Compare: c.options(), Member: c.names[w], EvidenceRoot: t.TempDir(), StepTimeout: 5 * time.Minute, Now: steppingClock(time.Minute)}
	plan, err := Replace(ctx, o)
	if err != nil || plan.Timing == nil || !plan.Timing.Fits || plan.Timing.Keys < 20 {
		t.Fatalf("with --command-timeout 5m: %v, %+v", err, plan)
	}
}
