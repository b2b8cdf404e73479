package leases

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/plural"
	"github.com/regghost/regghost/pkg/protect"
	"github.com/regghost/regghost/pkg/repair"
)

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
	past := a.EventTTL + a.LeaseReuse
	seen := map[string]bool{}
	for _, e := range a.PastTTL {
		seen[e.Key] = true
		r.Events = append(r.Events, e)
	}
	young := 0
	for _, e := range a.NoLease {
		switch {
		case seen[e.Key]:
		case e.Age > past && !a.NoAges:
			seen[e.Key] = true
			r.Events = append(r.Events, e)
		default:
			young++
		}
	}
	if young > 0 {
		r.Left = append(r.Left, fmt.Sprintf("%s with no lease %s not past the event TTL yet (or could not be read): left; they never expire, so run this again once they are", plural.Of(young, "event"), isAre(young)))
	}
	for _, l := range a.Big {
		gone := 0
		for _, e := range r.Events {
			if e.Lease == l.ID {
				gone++
			}
		}
		r.Left = append(r.Left, fmt.Sprintf("lease %x holds %d keys, more than %d: %d of them past the TTL are deleted in batches, the lease is never revoked (a revoke deletes every key it holds in one apply); the %d younger ones go when it expires", l.ID, l.Keys, a.MaxObjectCount, gone, l.Keys-gone))
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
		r.Left = append(r.Left, fmt.Sprintf("%s under a lease that %s neither an event nor a masterlease: left (whoever put them there owns them)", plural.Of(n, "key"), isAre(n)))
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
	Notices    io.Writer
	Decrypt    backup.Decrypter
	Now        func() time.Time
	// Serves asks again, under the lock, whether a kube-apiserver answers
	// at a masterlease's address ("" yes); nil leaves masterleases alone.
	Serves func(ctx context.Context, ip string, port int32) string
}

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
// masterleases' addresses asked again (one a kube-apiserver answers at now
// is left out); a verified per-key backup of every key as etcd holds it
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
	for _, e := range r.Events {
		wants = append(wants, protect.Want{ModRevision: e.ModRevision, Entry: backup.Entry{Key: e.Key,
			Classes: []string{"event-past-ttl"}, Reason: fmt.Sprintf("an event last written %s ago, past kube-apiserver's --event-ttl %s", e.Age.Round(time.Second), r.EventTTL)}})
	}
	for _, m := range r.MasterLeases {
		wants = append(wants, protect.Want{ModRevision: m.ModRevision, Entry: backup.Entry{Key: m.Key,
			Classes: []string{"stale-masterlease"}, Reason: "no kube-apiserver answers at " + m.IP + ": " + m.NotServed}})
	}
	record := &protect.Record{Root: o.BackupRoot, Scope: "events past their TTL and stale masterleases", Name: "leases", Keys: wants, ScanRevision: r.Revision, Now: o.Now}
	var served []etcdwrite.Result
	out, err := protect.Run(ctx, protect.Job{
		Client: o.Client, Holder: "regghost leases", Notices: o.Notices, Pacing: o.Pacing, Prefix: o.Prefix,
		Decrypt: o.Decrypt, Action: "leases", DeletesOnly: true, Backup: record,
		// A masterlease's address is asked again under the lock: one a
		// kube-apiserver answers at now is no longer stale.
		Rejudge: func(ctx context.Context) error {
			if len(r.MasterLeases) == 0 {
				return nil
			}
			now := map[string]string{}
			for _, m := range r.MasterLeases {
				why := "not asked again"
				if o.Serves != nil {
					why = o.Serves(ctx, m.IP, m.Port)
				}
				now[m.Key] = why
			}
			kept := record.Keys[:0:0]
			for _, w := range record.Keys {
				if why, ok := now[w.Entry.Key]; ok && why == "" {
					served = append(served, etcdwrite.Result{Key: w.Entry.Key, Outcome: etcdwrite.SkippedChanged, Detail: "a kube-apiserver answers at its address now: left"})
					continue
				}
				kept = append(kept, w)
			}
			record.Keys = kept
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
	if out == nil {
		return nil, err
	}
	res.Dir, res.Backup, res.Warnings = out.Dir, out.Backup, out.Warnings
	res.Results = append(served, out.Results...)
	return res, err
}

// isAre is the verb's number for n things.
func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}
