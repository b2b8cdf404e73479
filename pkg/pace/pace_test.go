package pace

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// fakeClock is a test's time: Sleep moves it on at once. A test drives a
// pacer from one goroutine, so it needs no lock.
type fakeClock struct {
	now   time.Time
	slept time.Duration
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time { return c.now }

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.now = c.now.Add(d)
	c.slept += d
	return nil
}

// probes is a probe answering after each latency in turn on clock (a
// negative one fails after its absolute value); once they are used up it
// ends the test's context.
func probes(clock *fakeClock, cancel context.CancelFunc, lats ...time.Duration) (Probe, *int) {
	n := 0
	return func(ctx context.Context) error {
		if n == len(lats) {
			cancel()
			return context.Canceled
		}
		d := lats[n]
		n++
		if d < 0 {
			clock.now = clock.now.Add(-d)
			return errors.New("etcdserver: request timed out")
		}
		clock.now = clock.now.Add(d)
		return nil
	}, &n
}

func ms(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }

// TestStep is the control law: back off multiplicatively above 1.5x the
// idle latency, raise additively below 1.2x, keep between, within Min and
// Max.
func TestStep(t *testing.T) {
	c := Config{Max: 20000, Step: 1000}.withDefaults() // Min 1000
	idle := ms(2)
	for _, tc := range []struct {
		name   string
		pace   float64
		median time.Duration
		want   float64
		change change
	}{
		{"as idle: raised by the step", 5000, ms(2), 6000, raised},
		{"just below the target", 5000, ms(2.39), 6000, raised},
		{"at the target: kept", 5000, ms(2.4), 5000, kept},
		{"between target and limit: kept", 5000, ms(2.8), 5000, kept},
		{"at the limit: kept", 5000, ms(3), 5000, kept},
		{"above the limit: halved", 5000, ms(3.1), 2500, backedOff},
		{"far above the limit: halved once", 5000, ms(200), 2500, backedOff},
		{"raised up to the highest", 19500, ms(1), 20000, raised},
		{"at the highest: stays", 20000, ms(1), 20000, raised},
		{"halved down to the lowest", 1500, ms(10), 1000, backedOff},
		{"at the lowest: stays", 1000, ms(10), 1000, backedOff},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ch := c.step(tc.pace, idle, tc.median)
			if got != tc.want || ch != tc.change {
				t.Errorf("step(%v, idle %s, median %s) = %v, %v; want %v, %v", tc.pace, idle, tc.median, got, ch, tc.want, tc.change)
			}
		})
	}
}

// TestDefaults: the bounds a Config is given are kept, and Min and Start
// stay within them.
func TestDefaults(t *testing.T) {
	for _, tc := range []struct {
		in                     Config
		min, start, step, high float64
	}{
		{Config{Max: 25000}, 1000, 1000, 1000, 25000},
		{Config{Max: 500}, 500, 500, 500, 500},
		{Config{Max: 100000, Min: 5000, Start: 200000, Step: 7}, 5000, 100000, 7, 100000},
		{Config{Max: 100000, Start: 10}, 1000, 1000, 1000, 100000},
		{Config{Max: 100000, Start: 20000}, 1000, 20000, 1000, 100000},
	} {
		c := tc.in.withDefaults()
		if c.Min != tc.min || c.Start != tc.start || c.Step != tc.step || c.Max != tc.high {
			t.Errorf("%+v: min %v start %v step %v max %v; want %v %v %v %v", tc.in, c.Min, c.Start, c.Step, c.Max, tc.min, tc.start, tc.step, tc.high)
		}
	}
	if _, err := New(nil, Config{}); err == nil || !strings.Contains(err.Error(), "highest pace must be positive") {
		t.Errorf("New without a highest pace: %v", err)
	}
}

// TestPacerFollowsLatency runs a pacer on a latency sequence, on a test's
// clock: the idle latency is the median of the first probes (one slow
// one does not move it), each control step the median of three probes
// (one slow probe is noise, two are load), a failed probe counts as the
// timeout, and the pace moves as the control law says.
func TestPacerFollowsLatency(t *testing.T) {
	idle := []time.Duration{ms(2), ms(2.1), ms(40), ms(1.9), ms(2)}
	for _, tc := range []struct {
		name  string
		floor time.Duration
		idle  []time.Duration
		steps [][]time.Duration
		// paces are the pace after each step.
		paces           []float64
		raised, backed  int
		failed          int
		wantIdle, worst time.Duration
	}{
		{
			name:  "as idle: raised every step up to the highest",
			idle:  idle,
			steps: [][]time.Duration{{ms(2), ms(2), ms(2)}, {ms(2), ms(2.2), ms(1.8)}, {ms(2), ms(2), ms(2)}},
			paces: []float64{3000, 4000, 5000}, raised: 3, wantIdle: ms(2), worst: ms(2),
		},
		{
			name:  "one slow probe in a step is noise",
			idle:  idle,
			steps: [][]time.Duration{{ms(2), ms(90), ms(2)}, {ms(30), ms(2), ms(2)}},
			paces: []float64{3000, 4000}, raised: 2, wantIdle: ms(2), worst: ms(2),
		},
		{
			name:  "two slow probes back off, then it climbs again",
			idle:  idle,
			steps: [][]time.Duration{{ms(2), ms(2), ms(2)}, {ms(2), ms(3.5), ms(4)}, {ms(3.2), ms(3.2), ms(3.2)}, {ms(2.5), ms(2.6), ms(2.7)}, {ms(2), ms(2), ms(2)}},
			// 3000, halved 1500, halved to the lowest 1000, kept, raised
			paces: []float64{3000, 1500, 1000, 1000, 2000}, raised: 2, backed: 2, wantIdle: ms(2), worst: ms(3.5),
		},
		{
			name:  "failed probes count as the timeout",
			idle:  idle,
			steps: [][]time.Duration{{ms(2), ms(2), ms(2)}, {-ms(5), ms(2), -ms(1)}},
			paces: []float64{3000, 1500}, raised: 1, backed: 1, failed: 2, wantIdle: ms(2), worst: DefaultTimeout,
		},
		{
			name: "a busy member when idle was measured: a quicker step is its idle",
			idle: []time.Duration{ms(6), ms(6), ms(6), ms(6), ms(6)},
			// against 6 ms, 3.5 would be quick; against 2 ms it is load
			steps: [][]time.Duration{{ms(2), ms(2), ms(2)}, {ms(3.5), ms(3.5), ms(3.5)}},
			paces: []float64{3000, 1500}, raised: 1, backed: 1, wantIdle: ms(2), worst: ms(3.5),
		},
		{
			name:  "a loopback probe's jitter under the floor is not load",
			floor: ms(1),
			idle:  []time.Duration{ms(0.2), ms(0.2), ms(0.3), ms(0.2), ms(0.2)},
			// 0.2 ms idle is taken as 1 ms: 1.1 ms is below 1.2x, 1.6 ms above 1.5x
			steps: [][]time.Duration{{ms(1.1), ms(1.1), ms(1.1)}, {ms(1.6), ms(1.6), ms(1.6)}},
			paces: []float64{3000, 1500}, raised: 1, backed: 1, wantIdle: ms(0.2), worst: ms(1.6),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var lats []time.Duration
			lats = append(lats, tc.idle...)
			for _, s := range tc.steps {
				lats = append(lats, s...)
			}
			probe, used := probes(clock, cancel, lats...)
			// Min 1000.
			p, err := New(probe, Config{Max: 20000, Start: 2000, Step: 1000, Floor: tc.floor, Clock: clock})
			if err != nil {
				t.Fatal(err)
			}
			// One step at a time: Run's probes are the same observations.
			if err := p.calibrate(ctx); err != nil {
				t.Fatal(err)
			}
			var got []float64
			for range tc.steps {
				for range DefaultWindow {
					lat, failed := p.measure(ctx)
					p.observe(lat, failed)
				}
				got = append(got, p.Stats().Pace)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.paces) {
				t.Errorf("paces %v, want %v", got, tc.paces)
			}
			s := p.Stats()
			if s.Idle != tc.wantIdle || s.Raised != tc.raised || s.BackedOff != tc.backed || s.Failed != tc.failed ||
				s.Probes != len(tc.steps)*DefaultWindow || s.Worst != tc.worst || *used != len(lats) {
				t.Errorf("stats %+v (%d probes made); want idle %s, %d raised, %d backed off, %d failed, worst %s", s, *used, tc.wantIdle, tc.raised, tc.backed, tc.failed, tc.worst)
			}
		})
	}
}

// TestRun: Run measures the idle latency, then probes every Every until
// its context ends, and the read's Wait waits for the idle latency.
func TestRun(t *testing.T) {
	clock := newFakeClock()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lats := []time.Duration{ms(2), ms(2), ms(2), ms(2), ms(2), ms(2), ms(2), ms(2), ms(9), ms(9), ms(9)}
	probe, used := probes(clock, cancel, lats...)
	p, err := New(probe, Config{Max: 20000, Start: 2000, Step: 1000, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	s := p.Stats()
	if *used != len(lats) || s.Probes != 6 || s.Raised != 1 || s.BackedOff != 1 || s.Pace != 1500 {
		t.Errorf("after %d probes: %+v", *used, s)
	}
	// 4 gaps of Every/10 between the idle probes, then 7 of Every (the
	// last one's probe ends the context).
	if want := 4*DefaultEvery/10 + 7*DefaultEvery; clock.slept != want {
		t.Errorf("slept %s, want %s", clock.slept, want)
	}
	if err := p.Run(ctx); err == nil {
		t.Error("a second Run should fail")
	}
}

// TestRunNoAnswer: when no idle probe answers, Run and every Wait say so.
func TestRunNoAnswer(t *testing.T) {
	clock := newFakeClock()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	probe, _ := probes(clock, cancel, -ms(1), -ms(1), -ms(1), -ms(1), -ms(1))
	p, err := New(probe, Config{Max: 20000, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	err = p.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "none of 5 probes answered: etcdserver: request timed out") {
		t.Fatalf("Run: %v", err)
	}
	if werr := p.Wait(context.Background(), 10); werr != err {
		t.Errorf("Wait: %v, want Run's error", werr)
	}
}

// TestWaitBeforeIdle: a Wait whose context ends before the idle latency
// is known returns at once.
func TestWaitBeforeIdle(t *testing.T) {
	p, err := New(func(context.Context) error { return nil }, Config{Max: 20000, Clock: newFakeClock()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.Wait(ctx, 10); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait: %v", err)
	}
}

// TestWait: Wait spends the keys at the pace, credits at most Every of
// time not spent reading, and keys owed when the pace changes are owed at
// the new pace.
func TestWait(t *testing.T) {
	clock := newFakeClock()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	probe, _ := probes(clock, cancel, ms(1), ms(1), ms(1), ms(1), ms(1))
	p, err := New(probe, Config{Max: 20000, Start: 1000, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.calibrate(ctx); err != nil {
		t.Fatal(err)
	}
	close(p.ready)
	wait := func(n int) time.Duration {
		t.Helper()
		before := clock.slept
		if err := p.Wait(context.Background(), n); err != nil {
			t.Fatal(err)
		}
		return clock.slept - before
	}
	// 1000 keys a second: 500 keys 500 ms, less Every not spent reading.
	if got := wait(500); got != 400*time.Millisecond {
		t.Errorf("first 500 keys: waited %s", got)
	}
	if got := wait(500); got != 500*time.Millisecond {
		t.Errorf("next 500 keys: waited %s", got)
	}
	clock.now = clock.now.Add(time.Hour) // a long pause credits Every only
	if got := wait(1000); got != 900*time.Millisecond {
		t.Errorf("after a pause: waited %s", got)
	}
	// 300 ms owed at 1000 a second are 150 ms at 2000.
	p.mu.Lock()
	p.next = clock.now.Add(300 * time.Millisecond)
	p.setPace(2000)
	owed := p.next.Sub(clock.now)
	p.mu.Unlock()
	if owed != 150*time.Millisecond {
		t.Errorf("owed %s at the new pace, want 150ms", owed)
	}
	if got := wait(200); got != 250*time.Millisecond {
		t.Errorf("200 keys after 150 ms owed at 2000 a second: waited %s", got)
	}
}
