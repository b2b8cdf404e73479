package leases

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/notice"
	"github.com/regghost/regghost/pkg/plural"
	"github.com/regghost/regghost/pkg/protect"
	"github.com/regghost/regghost/pkg/repair"
)

// Nice is the CPU priority regghost leases runs at (pace.Yield): its
// audit decodes every event it reads, and the processes of its CPU group
// run before it where the cores are all busy.
const Nice = 10

// AuditFloor is the lowest pace, keys a second, the audit reads at when
// etcd's latency says it is busy (pkg/pace): at it a million keys take
// under a minute.
const AuditFloor = 20_000

// RemovalFloor is AuditFloor when the audit is a removal's first step: a
// removal runs beside the writers for minutes anyway; with its audit at
// the audit's floor another client's put p99 was 2.0x idle in the bench,
// at this one 1.3x (bench/results.md).
const RemovalFloor = 5_000

// MaxRemoval is the most events one removal deletes.
var MaxRemoval = 100_000

// Removal is what `regghost leases --confirm` removes, and what it leaves
// with why: only keys nothing else will remove and nothing serves.
type Removal struct {
	Revision int64         `json:"revision"`
	EventTTL time.Duration `json:"eventTTL"`
	// Events are the events past their TTL: under a lease kept alive, or
	// under none (they never expire). Never one younger than the TTL.
	Events []Event `json:"events"`
	// MasterLeases are the masterleases at addresses no kube-apiserver
	// answers at (asked again at the write).
	MasterLeases []MasterLease `json:"masterLeases"`
	// Left says what the audit found that the removal leaves, and why.
	Left []string `json:"left"`
}

// Keys counts the keys the removal deletes.
func (r *Removal) Keys() int { return len(r.Events) + len(r.MasterLeases) }

// Plan is the removal an audit calls for. Events past their TTL (by their
// last write, beyond the TTL and the lease reuse kube-apiserver allows
// itself) are removed, with or without a lease; a big lease is emptied of
// those only, key by key in paced transactions, and never revoked (a
// revoke deletes every key in one apply); masterleases only when the
// audit asked the API server and nothing answers at their address, and
// not when the audit was of one namespace.
func Plan(a *Audit, namespace string) *Removal {
	r := &Removal{Revision: a.Revision, EventTTL: a.EventTTL, Events: []Event{}, MasterLeases: []MasterLease{}, Left: []string{}}
	// Only what the audit judged past the TTL by the servers' clocks, the
	// oldest first, at most MaxRemoval a run: each is backed up, and a
	// run's backup is held whole in memory while it is written.
	seen := map[string]bool{}
	past := slices.Clone(a.PastTTL)
	slices.SortStableFunc(past, func(x, y Event) int { return x.WrittenBefore.Compare(y.WrittenBefore) })
	for _, e := range past {
		seen[e.Key] = true
		if len(r.Events) < MaxRemoval {
			r.Events = append(r.Events, e)
		}
	}
	if n := len(past) - len(r.Events); n > 0 {
		r.Left = append(r.Left, fmt.Sprintf("%s past the TTL %s left for the next run: one run removes at most %d (the oldest first), each backed up, and a run's backup is held in memory while it is written; run this again for the rest", plural.Of(n, "more event"), plural.Be(n), MaxRemoval))
	}
	young := 0
	for _, e := range a.NoLease {
		if !seen[e.Key] {
			young++
		}
	}
	if young > 0 {
		r.Left = append(r.Left, fmt.Sprintf("%s with no lease %s not past the event TTL by the servers' clocks yet (or could not be read): left; they never expire, so run this again once they are", plural.Of(young, "event"), plural.Be(young)))
	}
	for _, l := range a.Big {
		gone := 0
		for _, e := range r.Events {
			if e.Lease == l.ID {
				gone++
			}
		}
		if left := l.Keys - gone; left > 0 {
			r.Left = append(r.Left, fmt.Sprintf("lease %x holds %d keys, more than %d: the %d past the TTL are deleted in batches and the lease is never revoked, but the %d others (younger, or not events) go when it expires, in one apply as a revoke would, and etcd stalls meanwhile: regghost cannot split a lease", l.ID, l.Keys, a.MaxObjectCount, gone, left))
		}
	}
	for _, m := range a.MasterLeases {
		switch {
		case !m.Stale():
		case namespace != "":
			r.Left = append(r.Left, "masterlease "+m.IP+": left, -n "+namespace+" removes that namespace's events only")
		case !m.Asked:
			r.Left = append(r.Left, "masterlease "+m.IP+": left, no API server was asked whether a kube-apiserver answers there")
		case m.NotServed == "":
			r.Left = append(r.Left, "masterlease "+m.IP+" has no lease but a kube-apiserver answers there: left (its lease reconciler writes it again)")
		default:
			r.MasterLeases = append(r.MasterLeases, m)
		}
	}
	if n := len(a.Unexpected); n > 0 {
		r.Left = append(r.Left, fmt.Sprintf("%s under a lease that %s neither an event nor a masterlease: left (whoever put them there owns them)", plural.Of(n, "key"), plural.Be(n)))
	}
	if n := len(a.Identities); n > 0 {
		r.Left = append(r.Left, fmt.Sprintf("%s of servers gone: left to kube-apiserver's garbage collector (they are Lease objects, not etcd leases)", plural.Of(n, "apiserver identity lease")))
	}
	if n := len(a.Unread); n > 0 {
		r.Left = append(r.Left, fmt.Sprintf("%s could not be read (encrypted with a key not given, or damaged): left unjudged", plural.Of(n, "value")))
	}
	return r
}

// RemoveOptions say how a removal writes.
type RemoveOptions struct {
	Client     *clientv3.Client
	Prefix     string
	BackupRoot string
	Pacing     etcdwrite.Pacing
	Notices    notice.Func
	Decrypt    backup.Decrypter
	Now        func() time.Time
	// Serves asks again, under the lock, whether a kube-apiserver answers
	// at a masterlease's address ("" yes); nil asks nothing (etcd's own
	// evidence, RenewWait, still holds).
	Serves func(ctx context.Context, ip string, port int32) string
	// RenewWait is how long a planned masterlease must stay unwritten
	// under the lock before it is deleted: kube-apiserver's lease
	// reconciler writes its own every 10 seconds, so one unchanged for
	// longer has nothing renewing it (DefaultRenewWait when 0).
	RenewWait time.Duration
}

// DefaultRenewWait is RemoveOptions.RenewWait's default: one and a half
// of kube-apiserver's endpoint reconcile intervals (10s).
const DefaultRenewWait = 15 * time.Second

// errAllAnswered stops a removal whose every key was left under the lock.
var errAllAnswered = errors.New("every planned key is served or renewed now")

// Removed is what a removal did.
type Removed struct {
	Dir      string             `json:"dir"`
	Backup   string             `json:"backup"`
	Deleted  int                `json:"deleted"`
	Planned  int                `json:"planned"`
	Results  []etcdwrite.Result `json:"results"`
	Warnings []string           `json:"warnings,omitempty"`
}

// ErrNothingToRemove is returned for a plan that removes nothing.
var ErrNothingToRemove = errors.New("nothing to remove")

// Remove deletes the plan's keys through the protected write: the lock; the
// masterleases judged again (one written again within RenewWait, or whose
// address a kube-apiserver answers at now, is left out); a verified per-key backup of every key as etcd holds it
// (restore puts them back, each under a lease of the TTL it had left); then
// deletes, each compared on the revision the audit judged it at (an event
// written since is left), in paced, size-bounded transactions that only
// delete (so it runs under etcd's NOSPACE alarm), each key read back. No
// full snapshot is taken: nothing but these keys is written.
func Remove(ctx context.Context, r *Removal, o RemoveOptions) (*Removed, error) {
	if r.Keys() == 0 {
		return nil, ErrNothingToRemove
	}
	res := &Removed{Planned: r.Keys()}
	var wants []protect.Want
	// The masterleases first: they are deleted right after they were
	// judged again.
	for _, m := range r.MasterLeases {
		wants = append(wants, protect.Want{ModRevision: m.ModRevision, Entry: backup.Entry{Key: m.Key,
			Classes: []string{"stale-masterlease"}, Reason: "no kube-apiserver answers at " + m.IP + ": " + m.NotServed}})
	}
	for _, e := range r.Events {
		wants = append(wants, protect.Want{ModRevision: e.ModRevision, Entry: backup.Entry{Key: e.Key,
			Classes: []string{"event-past-ttl"}, Reason: fmt.Sprintf("an event last written in etcd before %s, past the event TTL %s", e.WrittenBefore.UTC().Format(time.RFC3339), r.EventTTL)}})
	}
	wait := o.RenewWait
	if wait <= 0 {
		wait = DefaultRenewWait
	}
	record := &protect.Record{Root: o.BackupRoot, Scope: "events past their TTL and stale masterleases", Name: "leases", Keys: wants, ScanRevision: r.Revision, Now: o.Now}
	var served []etcdwrite.Result
	out, err := protect.Run(ctx, protect.Job{
		Client: o.Client, Holder: "regghost leases", Notices: o.Notices, Pacing: o.Pacing, Prefix: o.Prefix,
		Decrypt: o.Decrypt, Action: "leases", DeletesOnly: true, Backup: record,
		// A masterlease's address is asked again under the lock: one a
		// kube-apiserver answers at now is no longer stale.
		// A masterlease is judged again under the lock: from etcd (one its
		// server renews is written again within RenewWait) and from its
		// address (one a kube-apiserver answers at now is not stale).
		Rejudge: func(ctx context.Context) error {
			if len(r.MasterLeases) == 0 {
				return nil
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(wait):
			}
			left := map[string]string{}
			for _, m := range r.MasterLeases {
				resp, err := o.Client.Get(ctx, m.Key)
				switch {
				case err != nil:
					return fmt.Errorf("read %s again: %w", m.Key, err)
				case len(resp.Kvs) == 0:
					left[m.Key] = "gone since the audit"
				case resp.Kvs[0].ModRevision != m.ModRevision:
					left[m.Key] = fmt.Sprintf("written again since the audit (revision %d): something renews it; left", resp.Kvs[0].ModRevision)
				case o.Serves != nil && o.Serves(ctx, m.IP, m.Port) == "":
					left[m.Key] = "a kube-apiserver answers at its address now: left"
				}
			}
			kept := record.Keys[:0:0]
			for _, w := range record.Keys {
				if why, ok := left[w.Entry.Key]; ok {
					served = append(served, etcdwrite.Result{Key: w.Entry.Key, Outcome: etcdwrite.SkippedChanged, Detail: why})
					continue
				}
				kept = append(kept, w)
			}
			record.Keys = kept
			if len(kept) == 0 {
				return errAllAnswered
			}
			return nil
		},
		Write: func(ctx context.Context, w *protect.Writer) ([]etcdwrite.Result, error) {
			w.Journal(served...)
			results, err := repair.DeleteEntries(ctx, o.Client, w.Backup.Entries, w.Pacing, func(r etcdwrite.Result) { w.Journal(r) })
			for _, r := range results {
				if r.Outcome == etcdwrite.Deleted {
					res.Deleted++
				}
			}
			return results, err
		},
	})
	if errors.Is(err, errAllAnswered) {
		res.Results = served
		return res, nil
	}
	if out == nil {
		return nil, err
	}
	res.Dir, res.Backup, res.Warnings = out.Dir, out.Backup, out.Warnings
	res.Results = append(served, out.Results...)
	return res, err
}

// Duration is about how long the deletes and their read-back take at
// pacing (one key a transaction where the datastore takes no more), with
// the masterleases' wait: what --command-timeout must leave them.
func (r *Removal) Duration(p etcdwrite.Pacing, oneKey bool) time.Duration {
	return deleteTime(r.Keys(), len(r.MasterLeases) > 0, p, oneKey)
}

// deleteTime is how long keys take to delete at p (one a transaction
// where oneKey) and be read back, and, with masterleases, the wait before
// one is deleted.
func deleteTime(keys int, masterleases bool, p etcdwrite.Pacing, oneKey bool) time.Duration {
	p = p.Normalized()
	per := p.BatchSize
	if oneKey {
		per = 1
	}
	txns := (keys + per - 1) / per
	d := time.Duration(float64(txns) / p.PerSecond * float64(time.Second))
	// Every key is read back after, at repair's read-back pace (four
	// transactions for each delete transaction's time).
	d += d / 4
	if masterleases {
		d += DefaultRenewWait
	}
	return d
}

// withSpare is need with the quarter a removal keeps to spare within
// --command-timeout.
func withSpare(need time.Duration) time.Duration { return need * 4 / 3 }

// Fits is nil when the deletes and their read-back at p, with a quarter
// to spare, fit in left, the time --command-timeout (timeout) leaves after
// the audit; else it says why not. Nothing is written before it.
func (r *Removal) Fits(p etcdwrite.Pacing, oneKey bool, left, timeout time.Duration) error {
	need := r.Duration(p, oneKey)
	if withSpare(need) <= left {
		return nil
	}
	return fmt.Errorf("the deletes take about %s at --rate %g with --batch-size %d, more than --command-timeout %s leaves: give a longer --command-timeout (or a higher --rate); nothing was changed",
		need.Round(time.Second), p.PerSecond, p.BatchSize, timeout)
}

// Dialer says whether anything listens at a masterlease's address: a TCP
// connection within timeout is an answer (nothing is sent, no credential),
// and only a refused, unreachable or silent address is not. port is used
// where the masterlease names none (the API server's own, as reached).
func Dialer(port string, timeout time.Duration) func(ctx context.Context, ip string, p int32) string {
	return func(ctx context.Context, ip string, p int32) string {
		at := port
		if p != 0 {
			at = strconv.Itoa(int(p))
		}
		d := net.Dialer{Timeout: timeout}
		conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(ip, at))
		if err != nil {
			return err.Error()
		}
		conn.Close()
		return ""
	}
}

// LeftSome says whether a removal left something: what the plan left as
// is, or a key written again since (one gone by itself is not left).
func (r *Removed) LeftSome(plan *Removal) bool {
	return len(plan.Left) > 0 || slices.ContainsFunc(r.Results, func(res etcdwrite.Result) bool {
		return res.Outcome != etcdwrite.Deleted && res.Outcome != etcdwrite.SkippedGone
	})
}
