// Package pace paces a reader of etcd by what the member it reads says
// of its own load, instead of at one pace for every machine.
//
// A Pacer measures a probe, a request that costs the member nearly nothing
// (members' is a serializable Get of one key), first before the read (its
// idle latency, the median of a few probes; lowered later to any quicker
// control step's, when the member was busy then) and then every Every
// while the read goes on. Every Window probes make one control step,
// decided by their median (one slow probe is noise; a run of them is
// load):
//
//   - above Limit (1.5) times the idle latency, the pace is multiplied by
//     Backoff (0.5), down to Min;
//   - below Target (1.2) times the idle latency, it is raised by Step
//     (Min, 1000 keys a second), up to Max;
//   - between the two it is kept.
//
// That is AIMD, as TCP and the API server's priority and fairness adapt:
// the pace starts at Min and climbs slowly while the member answers as it
// does idle, and is halved as soon as it does not. A probe that fails or
// outlasts Timeout counts as Timeout: a member that stops answering is
// read at Min.
//
// The probe is a read, so a member whose read path is the one under load
// (the range reads being paced, another client's lists, its CPU) says so
// at once. A write's own latency (its WAL fsync, its quorum) is not in it,
// and the read slows the probe more, in ratio, than another client's
// writes, which wait on the disk as well: 1.5x the probe's idle latency
// is a stricter bound than 1.5x the writes'. Idle latencies below Floor
// are taken as Floor, so the scheduling jitter of a probe answered in a
// fraction of a millisecond is not taken for load.
package pace

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of Config.
const (
	// DefaultMin is the lowest pace, keys a second, the first, and the
	// step it climbs by: at it a member busy for reasons of its own is
	// still read, a million keys in 17 minutes.
	DefaultMin = 1000
	// DefaultTarget is the ratio of the idle latency below which the pace
	// is raised.
	DefaultTarget = 1.2
	// DefaultLimit is the ratio of the idle latency above which the pace
	// backs off.
	DefaultLimit = 1.5
	// DefaultBackoff multiplies the pace on a step above the limit.
	DefaultBackoff = 0.5
	// DefaultEvery is the time between probes.
	DefaultEvery = 100 * time.Millisecond
	// DefaultWindow is how many probes make a control step.
	DefaultWindow = 3
	// DefaultIdleProbes is how many probes measure the idle latency.
	DefaultIdleProbes = 5
	// DefaultFloor is the lowest idle latency the ratios are taken of:
	// below it a probe's latency is mostly two processes' scheduling,
	// whose jitter is not load.
	DefaultFloor = 250 * time.Microsecond
	// DefaultTimeout bounds each probe.
	DefaultTimeout = time.Second
)

// Probe asks the member read something that costs it nearly nothing; its
// latency is what the pace follows. It returns once the member answered.
type Probe func(ctx context.Context) error

// Clock is the time a Pacer reads and sleeps by.
type Clock interface {
	// Now is the current time.
	Now() time.Time
	// Sleep waits d, or until ctx ends (then ctx's error).
	Sleep(ctx context.Context, d time.Duration) error
}

// Config bounds and tunes a Pacer. Its zero fields take the defaults;
// Max is required.
type Config struct {
	// Max is the highest pace, keys a second.
	Max float64
	// Min is the lowest pace (DefaultMin; at most Max).
	Min float64
	// Start is the pace until the first control step (Min; at most
	// Max): a read starts slow and climbs while the member answers as it
	// does idle.
	Start float64
	// Step is how much a step below Target raises the pace (Min).
	Step float64
	// Target and Limit are ratios of the idle latency: below Target the
	// pace is raised, above Limit it backs off (DefaultTarget,
	// DefaultLimit).
	Target, Limit float64
	// Backoff multiplies the pace on a step above Limit (DefaultBackoff).
	Backoff float64
	// Every is the time between probes (DefaultEvery).
	Every time.Duration
	// Window is how many probes make one control step (DefaultWindow).
	Window int
	// IdleProbes is how many probes measure the idle latency
	// (DefaultIdleProbes).
	IdleProbes int
	// Floor is the lowest idle latency the ratios are taken of
	// (DefaultFloor).
	Floor time.Duration
	// Timeout bounds each probe; a probe that fails counts as Timeout
	// (DefaultTimeout).
	Timeout time.Duration
	// Clock is the time the pacer reads and sleeps by (nil: the
	// machine's).
	Clock Clock
}

// withDefaults is c with its zero fields set, and Min, Start kept within
// bounds.
func (c Config) withDefaults() Config {
	or := func(v *float64, d float64) {
		if *v <= 0 {
			*v = d
		}
	}
	or(&c.Min, DefaultMin)
	c.Min = min(c.Min, c.Max)
	or(&c.Start, c.Min)
	c.Start = min(max(c.Start, c.Min), c.Max)
	or(&c.Step, c.Min)
	or(&c.Target, DefaultTarget)
	or(&c.Limit, DefaultLimit)
	or(&c.Backoff, DefaultBackoff)
	if c.Every <= 0 {
		c.Every = DefaultEvery
	}
	if c.Window <= 0 {
		c.Window = DefaultWindow
	}
	if c.IdleProbes <= 0 {
		c.IdleProbes = DefaultIdleProbes
	}
	if c.Floor <= 0 {
		c.Floor = DefaultFloor
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Clock == nil {
		c.Clock = machine{}
	}
	return c
}

// step is the control law: the pace after a control step whose median
// probe latency was m, the idle latency (at least Floor) being idle.
func (c *Config) step(pace float64, idle, m time.Duration) (float64, change) {
	switch {
	case float64(m) > c.Limit*float64(idle):
		return max(c.Min, pace*c.Backoff), backedOff
	case float64(m) < c.Target*float64(idle):
		return min(c.Max, pace+c.Step), raised
	}
	return pace, kept
}

type change int

const (
	kept change = iota
	raised
	backedOff
)

// Stats are what a Pacer saw and did.
type Stats struct {
	// Idle is the idle latency: the median of the probes before the read,
	// or a quicker step's median (before Floor).
	Idle time.Duration
	// Pace is the pace now; Lowest and Highest the lowest and highest it
	// was set to, keys a second.
	Pace, Lowest, Highest float64
	// Probes counts the probes made while reading, Failed those that
	// failed or timed out.
	Probes, Failed int
	// Raised and BackedOff count the control steps that raised the pace
	// and that backed off.
	Raised, BackedOff int
	// Worst is the highest median latency of a control step.
	Worst time.Duration
}

// Pacer paces one reader of one member: Wait before reading keys, and Run
// beside the read for as long as it lasts.
type Pacer struct {
	cfg   Config
	probe Probe
	run   atomic.Bool
	// ready is closed once the idle latency was measured, or could not
	// be (readyErr).
	ready    chan struct{}
	readyErr error

	mu     sync.Mutex
	idle   time.Duration
	pace   float64
	next   time.Time
	window []time.Duration
	stats  Stats
}

// New is a Pacer of probe within c's bounds; c.Max must be positive (an
// unpaced read needs no pacer).
func New(probe Probe, c Config) (*Pacer, error) {
	if !(c.Max > 0) {
		return nil, fmt.Errorf("pace: the highest pace must be positive, got %v keys a second", c.Max)
	}
	c = c.withDefaults()
	return &Pacer{cfg: c, probe: probe, ready: make(chan struct{}), pace: c.Start,
		stats: Stats{Pace: c.Start, Lowest: c.Start, Highest: c.Start}}, nil
}

// Run measures the idle latency, then probes every Every and sets the pace
// until ctx ends. Start it before the read, once: the read waits for the
// idle latency (measured while nothing is read). It returns an error when
// no idle probe answered, or ctx ended before one did (Wait then returns
// it too), or when it was run before.
func (p *Pacer) Run(ctx context.Context) error {
	if p.run.Swap(true) {
		return errors.New("pacer already run")
	}
	p.readyErr = p.calibrate(ctx)
	close(p.ready)
	if p.readyErr != nil {
		return p.readyErr
	}
	for {
		if err := p.cfg.Clock.Sleep(ctx, p.cfg.Every); err != nil {
			return nil
		}
		lat, failed := p.measure(ctx)
		if ctx.Err() != nil {
			return nil
		}
		p.observe(lat, failed)
	}
}

// calibrate measures the idle latency: the median of IdleProbes probes,
// a few milliseconds apart.
func (p *Pacer) calibrate(ctx context.Context) error {
	var lats []time.Duration
	var lastErr error
	for i := range p.cfg.IdleProbes {
		if i > 0 {
			if err := p.cfg.Clock.Sleep(ctx, p.cfg.Every/10); err != nil {
				return err
			}
		}
		start := p.cfg.Clock.Now()
		err := p.try(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			lastErr = err
			continue
		}
		lats = append(lats, p.cfg.Clock.Now().Sub(start))
	}
	if len(lats) == 0 {
		return fmt.Errorf("measure the idle latency: none of %d probes answered: %w", p.cfg.IdleProbes, lastErr)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.Idle = median(lats)
	p.idle = max(p.stats.Idle, p.cfg.Floor)
	return nil
}

func (p *Pacer) try(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	return p.probe(ctx)
}

// measure makes one probe: its latency, or Timeout when it failed.
func (p *Pacer) measure(ctx context.Context) (time.Duration, bool) {
	start := p.cfg.Clock.Now()
	if err := p.try(ctx); err != nil {
		return p.cfg.Timeout, true
	}
	return min(p.cfg.Clock.Now().Sub(start), p.cfg.Timeout), false
}

// observe takes one probe's latency; every Window of them make a control
// step.
func (p *Pacer) observe(lat time.Duration, failed bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.Probes++
	if failed {
		p.stats.Failed++
	}
	p.window = append(p.window, lat)
	if len(p.window) < p.cfg.Window {
		return
	}
	m := median(p.window)
	p.window = p.window[:0]
	p.stats.Worst = max(p.stats.Worst, m)
	pace, ch := p.cfg.step(p.pace, p.idle, m)
	if m < p.stats.Idle {
		// The member was busy when the idle latency was measured: the
		// quickest step is nearer its idle.
		p.stats.Idle = m
		p.idle = max(m, p.cfg.Floor)
	}
	switch ch {
	case raised:
		p.stats.Raised++
	case backedOff:
		p.stats.BackedOff++
	}
	p.setPace(pace)
}

// setPace changes the pace; the keys already waited for are owed at the
// new pace from now on.
func (p *Pacer) setPace(pace float64) {
	if pace == p.pace {
		return
	}
	now := p.cfg.Clock.Now()
	if owed := p.next.Sub(now); owed > 0 {
		p.next = now.Add(time.Duration(float64(owed) * p.pace / pace))
	}
	p.pace = pace
	p.stats.Pace = pace
	p.stats.Lowest, p.stats.Highest = min(p.stats.Lowest, pace), max(p.stats.Highest, pace)
}

// Wait returns once n more keys may be read at the pace, or when ctx
// ends. The first Wait returns once Run has measured the idle latency;
// Run must be running (or have run). Time not spent reading is credited
// for at most Every.
func (p *Pacer) Wait(ctx context.Context, n int) error {
	select {
	case <-p.ready:
		if p.readyErr != nil {
			return p.readyErr
		}
	case <-ctx.Done():
		return ctx.Err()
	}
	p.mu.Lock()
	if earliest := p.cfg.Clock.Now().Add(-p.cfg.Every); p.next.Before(earliest) {
		p.next = earliest
	}
	p.next = p.next.Add(time.Duration(float64(n) / p.pace * float64(time.Second)))
	p.mu.Unlock()
	for {
		p.mu.Lock()
		d := p.next.Sub(p.cfg.Clock.Now())
		p.mu.Unlock()
		if d <= 0 {
			return nil
		}
		// In slices, so a pace changed meanwhile applies at once.
		if err := p.cfg.Clock.Sleep(ctx, min(d, p.cfg.Every)); err != nil {
			return err
		}
	}
}

// Stats are what the pacer saw and did so far.
func (p *Pacer) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// median of ds (the upper one of an even count); ds is not changed.
func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// machine is the machine's clock.
type machine struct{}

func (machine) Now() time.Time { return time.Now() }

func (machine) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
