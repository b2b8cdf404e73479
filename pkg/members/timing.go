package members

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/regghost/regghost/pkg/plural"
)

// Timing is how long a comparison of the members takes against the time
// each step of a replacement has (StepTimeout: --command-timeout). The
// comparison after the promotion reads every member's keyspace again, as
// the one that planned did: one that runs out of time there leaves the
// replacement unfinished (compared again and CORRUPT disarmed by no run
// given the same time), so the plan is refused first.
type Timing struct {
	// Keys is the most keys one member's read held; PerSecond the pace of
	// each member's read (--max-keys-per-second; 0: as fast as they
	// serve). The members are read at once, each at that pace.
	Keys      int64 `json:"keys"`
	PerSecond int   `json:"perSecond"`
	// Took is how long the comparison that planned took, in seconds.
	Took float64 `json:"took"`
	// Needs is the time planned for a comparison, in seconds: the longer
	// of Took and Keys at PerSecond, and a quarter more (the keyspace
	// grows, a paced read backs off under load).
	Needs float64 `json:"needs"`
	// Timeout is the time each step has, in seconds.
	Timeout float64 `json:"timeout"`
	// Fits is set when Needs is within Timeout.
	Fits bool `json:"fits"`
	// FitTimeout and FitPerSecond are a --command-timeout (seconds, whole
	// minutes) and a --max-keys-per-second that would fit, when it does
	// not (0: no pace would).
	FitTimeout   float64 `json:"fitTimeout,omitempty"`
	FitPerSecond int     `json:"fitPerSecond,omitempty"`
}

// timingSpare is the share added to a comparison's time: the keyspace
// grows between the plan and the comparison after the promotion, and a
// paced read backs off when the members are busy.
const timingSpare = 0.25

// timing plans a comparison that reads keys from each member at
// perSecond (0: unpaced), after one that took took, against timeout.
func timing(keys int64, perSecond int, took, timeout time.Duration) *Timing {
	t := &Timing{Keys: keys, PerSecond: perSecond, Took: took.Seconds(), Timeout: timeout.Seconds()}
	atPace := 0.0
	if perSecond > 0 {
		atPace = float64(keys) / float64(perSecond)
	}
	t.Needs = math.Max(t.Took, atPace) * (1 + timingSpare)
	t.Fits = t.Needs <= t.Timeout
	if t.Fits {
		return t
	}
	t.FitTimeout = math.Max(60, math.Ceil(t.Needs/60)*60)
	if perSecond > 0 && keys > 0 {
		// What the comparison took besides reading at the pace (hashes,
		// leases, member lists) stays; the read must fit in the rest.
		rest := t.Timeout/(1+timingSpare) - math.Max(t.Took-atPace, 0)
		if rest > 0 {
			q := int(math.Ceil(float64(keys)/rest/1000)) * 1000
			if q > perSecond {
				t.FitPerSecond = q
			}
		}
	}
	return t
}

// maxKeysRead is the most keys one member's read held in r (0: the keys
// were not read).
func maxKeysRead(r *Report) int64 {
	var n int64
	for _, m := range r.Keys.Reads {
		n = max(n, m.Keys)
	}
	return n
}

// paceWords say a pace: "at up to 25000 keys a second each
// (--max-keys-per-second)", or unpaced.
func paceWords(perSecond int) string {
	if perSecond <= 0 {
		return "unpaced (--max-keys-per-second 0)"
	}
	return fmt.Sprintf("at up to %d keys a second each (--max-keys-per-second)", perSecond)
}

// seconds is s seconds as a duration, to the second.
func seconds(s float64) time.Duration {
	return time.Duration(math.Ceil(s)) * time.Second
}

// flagDuration is d as a --command-timeout value: whole minutes as "7m".
func flagDuration(d time.Duration) string {
	if d%time.Minute == 0 {
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}

// fitWays name the flag values that would fit.
func (t *Timing) fitWays() string {
	ways := fmt.Sprintf("--command-timeout %s", flagDuration(seconds(t.FitTimeout)))
	if t.FitPerSecond > 0 {
		ways += fmt.Sprintf(", or --max-keys-per-second %d (a faster read costs the API server's writes more)", t.FitPerSecond)
	}
	return ways
}

// timeBudget plans, before the first write, the time of the comparison
// after the promotion into the plan, and refuses when it would not fit
// in the time each step has.
func (r *replaceRun) timeBudget(p *replacePlan) error {
	t := p.res.Timing
	if t == nil || t.Fits {
		return nil
	}
	return fmt.Errorf("%w: the comparison after the promotion reads every member's keyspace again, as this one did (%s on one member, %s; it took %s): "+
		"planned at %s with a quarter to spare, more than the --command-timeout %s each step has; it would run out once %s is promoted, "+
		"and leave the replacement unfinished: run with %s; nothing was changed",
		ErrRefused, plural.Of(t.Keys, "key"), paceWords(t.PerSecond), seconds(t.Took), seconds(t.Needs), flagDuration(seconds(t.Timeout)), r.o.Member, t.fitWays())
}

// ranOut is the refusal when the comparison that plans did not finish
// within the time a step has (err its error): the one after the
// promotion would not either.
func (r *replaceRun) ranOut(err error) error {
	o := r.o
	within := ""
	if p := o.Compare.Reads.MaxKeysPerSecond; p > 0 {
		within = fmt.Sprintf(" (at --max-keys-per-second %d a member's read covers at most %s in that time)", p,
			plural.Of(int64(p)*int64(o.stepTimeout()/time.Second), "key"))
	}
	return fmt.Errorf("%w: comparing the members did not finish within the --command-timeout %s each step has%s, and the comparison after the promotion "+
		"reads every member's keyspace again: run with a longer --command-timeout (each member's keys at the pace, and a quarter more) "+
		"or a higher --max-keys-per-second; nothing was changed (%w)", ErrRefused, flagDuration(o.stepTimeout()), within, err)
}

// ranOutOf reports whether ctx, a step's context made from parent, ended
// by its own deadline while parent still runs.
func ranOutOf(ctx, parent context.Context) bool {
	return errors.Is(ctx.Err(), context.DeadlineExceeded) && parent.Err() == nil
}
