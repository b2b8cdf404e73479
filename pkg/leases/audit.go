// Package leases audits what keeps etcd's keys alive: every etcd lease the
// keyspace hangs on, read from the keys' own range responses (each key
// carries its lease ID) instead of one request per lease, and judged in
// exact classes: events older than the event TTL kube-apiserver runs with,
// events with no lease (they never expire), leases holding more keys than
// kube-apiserver ever puts on one (1000; revoking one stalls etcd), keys under a lease
// that are neither events nor masterleases, keyless leases (counted, not a
// fault: a key overwritten without a lease leaves one; kube-apiserver puts
// only events, masterleases and peerserverleases under leases), masterleases of
// addresses no kube-apiserver answers at, and apiserver identity leases no
// server renews. It reads and judges; it writes nothing.
package leases

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/regghost/regghost/pkg/decode"
	"github.com/regghost/regghost/pkg/etcdscan"
)

// Defaults are kube-apiserver's own.
const (
	// DefaultEventTTL is kube-apiserver's --event-ttl.
	DefaultEventTTL = time.Hour
	// DefaultLeaseReuse is --lease-reuse-duration-seconds: an event's
	// lease may be granted that long before the event is written, with its
	// TTL lengthened by as much.
	DefaultLeaseReuse = 60 * time.Second
	// DefaultMaxObjectCount is the most keys kube-apiserver puts on one
	// lease (built in: it has no flag for it).
	DefaultMaxObjectCount = 1000
	// identityRenewal is how often a kube-apiserver renews its identity
	// lease; one not renewed for staleAfter renewals has no server.
	identityRenewal = 10 * time.Second
	staleAfter      = 6
	identityGC      = time.Hour
)

// Options say what the audit judges against.
type Options struct {
	Registry string
	// Namespace, when set, judges only the events of that namespace (the
	// leases are the whole keyspace's).
	Namespace string
	// NoAges leaves the events' ages unjudged (a copy of etcd is not
	// judged against today's clock).
	NoAges bool
	// EventTTL, LeaseReuse and MaxObjectCount are kube-apiserver's
	// settings (0: its defaults).
	EventTTL, LeaseReuse time.Duration
	MaxObjectCount       int
	// LeaseIsTTL says the datastore is kine: it keeps no etcd leases, and
	// a key's lease ID is its TTL in seconds, so every key of one TTL
	// shares an "ID" and no lease can be too big to revoke.
	LeaseIsTTL bool
	// LeaseTTL is the TTL a lease was granted with, in seconds (nil: not
	// asked, offline): an event under a lease granted for longer than the
	// event TTL is judged against its lease.
	LeaseTTL func(ctx context.Context, id int64) (int64, error)
	// Granted lists the lease IDs etcd holds (nil: not asked, offline).
	Granted func(ctx context.Context) ([]int64, error)
	// Serves says whether a kube-apiserver answers at a masterlease's
	// address and port ("" yes; otherwise why not); nil: not asked.
	Serves func(ctx context.Context, ip string, port int32) string
	// Open decrypts a value encrypted at rest (nil: such values are not
	// read, and their events are named unread).
	Open func(ctx context.Context, key string, value []byte) ([]byte, error)
	Now  func() time.Time
}

// Event is one event the audit names.
type Event struct {
	Key       string        `json:"key"`
	Namespace string        `json:"namespace"`
	Reason    string        `json:"reason"`
	Age       time.Duration `json:"age"`
	// WrittenBefore bounds its last write by the servers' clock: an event
	// kube-apiserver created after it (a later revision) was created then.
	// Zero when no event was created after it.
	WrittenBefore time.Time `json:"writtenBefore,omitzero"`
	Lease         int64     `json:"lease,omitempty"`
	// ModRevision is the revision it was judged at: a removal deletes it
	// only while it is unchanged.
	ModRevision int64 `json:"modRevision"`
	// Bytes is its key's and stored value's length.
	Bytes int64 `json:"bytes"`
}

// Lease is one etcd lease and the keys that hang on it.
type Lease struct {
	ID   int64 `json:"id"`
	Keys int   `json:"keys"`
	// Bytes is its keys' and stored values' length.
	Bytes int64 `json:"bytes"`
	// ByResource counts its keys per resource prefix ("events").
	ByResource map[string]int `json:"byResource"`
}

// Key is one key under a lease.
type Key struct {
	Key   string `json:"key"`
	Lease int64  `json:"lease"`
}

// MasterLease is one /registry/masterleases/ entry: a kube-apiserver's
// address the default/kubernetes Service sends traffic to.
type MasterLease struct {
	// Key and ModRevision are the key and the revision it was judged at.
	Key         string `json:"key"`
	ModRevision int64  `json:"modRevision"`
	IP          string `json:"ip"`
	Port        int32  `json:"port,omitempty"`
	Lease       int64  `json:"lease"`
	// NotServed says why no kube-apiserver answers there ("" when one
	// does, or when it was not asked: Asked).
	NotServed string `json:"notServed,omitempty"`
	Asked     bool   `json:"asked"`
	// Unasked says why it was not asked, when a probe was meant to be.
	Unasked string `json:"unasked,omitempty"`
}

// Stale says the masterlease is a fault: under no lease (written back by
// a restore or another tool, it never expires), or at an address no
// kube-apiserver answers at.
func (m MasterLease) Stale() bool { return m.Lease == 0 || m.NotServed != "" }

// Identity is a kube-system/apiserver-* identity lease no server renews.
type Identity struct {
	Key    string        `json:"key"`
	Holder string        `json:"holder"`
	Since  time.Duration `json:"since"`
	// Expired says its leaseDurationSeconds passed too: kube-apiserver
	// should have deleted it.
	Expired bool `json:"expired"`
}

// Audit is what the keyspace's leases hold, by class.
type Audit struct {
	Registry string `json:"registry"`
	Revision int64  `json:"revision"`
	// NoAges says the events' ages were not judged (a copy of etcd).
	NoAges bool `json:"noAges,omitempty"`
	// LeaseIsTTL says the datastore is kine: a key's lease is its TTL in
	// seconds, and the big-lease class does not apply.
	LeaseIsTTL     bool          `json:"leaseIsTTL,omitempty"`
	EventTTL       time.Duration `json:"eventTTL"`
	LeaseReuse     time.Duration `json:"leaseReuse"`
	MaxObjectCount int           `json:"maxObjectCount"`
	// Events counts every event; LeasedKeys every key under a lease.
	Events     int `json:"events"`
	LeasedKeys int `json:"leasedKeys"`
	// Leases are the leases keys hang on, most keys first.
	Leases []Lease `json:"leases"`
	// Granted counts the leases etcd holds, Keyless those no key hangs
	// on (-1 both: not asked, offline). Keyless is not a fault.
	Granted int `json:"granted"`
	Keyless int `json:"keyless"`
	// GrantedUnread says why Granted was not counted.
	GrantedUnread string `json:"grantedUnread,omitempty"`
	// The classes.
	PastTTL      []Event       `json:"pastTTL"`
	NoLease      []Event       `json:"noLease"`
	Big          []Lease       `json:"big"`
	Unexpected   []Key         `json:"unexpected"`
	MasterLeases []MasterLease `json:"masterLeases"`
	Identities   []Identity    `json:"identities"`
	// Unread are events and identity leases whose value did not decode
	// (encrypted with a key not given, or damaged): they are not judged.
	Unread []string `json:"unread"`

	// candidates are the events whose own timestamps put them past the
	// TTL, and created the events' create revisions and times, until
	// judgePast.
	candidates []Event
	created    []created
}

// Faults counts what the audit calls a fault (exit 3): every class but the
// keyless leases, which are normal.
func (a *Audit) Faults() int {
	n := len(a.PastTTL) + len(a.NoLease) + len(a.Big) + len(a.Unexpected) + len(a.Identities)
	for _, m := range a.MasterLeases {
		if m.Stale() {
			n++
		}
	}
	return n
}

// The classes' names, as Counts and the exporter's series call them.
const (
	ClassPastTTL    = "events-past-ttl"
	ClassNoLease    = "events-without-lease"
	ClassBig        = "leases-over-limit"
	ClassUnexpected = "leased-unexpected"
	ClassMaster     = "masterleases-stale"
	ClassIdentity   = "apiserver-identities-stale"
	ClassKeyless    = "leases-keyless"
	// ClassUnread counts the values not judged: events and identity
	// leases that did not decode, events whose lease's TTL could not be
	// read.
	ClassUnread = "values-not-judged"
)

// Counts counts each class that was judged: the events past their TTL
// only when ages were judged (not in a copy of etcd), the stale
// masterleases only when every one under a lease was asked, the keyless
// leases only when etcd's leases were listed (they are no fault); and the
// values not judged.
func (a *Audit) Counts() map[string]int {
	c := map[string]int{ClassNoLease: len(a.NoLease), ClassBig: len(a.Big),
		ClassUnexpected: len(a.Unexpected), ClassIdentity: len(a.Identities), ClassUnread: len(a.Unread)}
	if !a.NoAges {
		c[ClassPastTTL] = len(a.PastTTL)
	}
	stale, asked := 0, true
	for _, m := range a.MasterLeases {
		if m.Stale() {
			stale++
		}
		asked = asked && (m.Asked || m.Lease == 0)
	}
	if asked {
		c[ClassMaster] = stale
	}
	if a.Keyless >= 0 {
		c[ClassKeyless] = a.Keyless
	}
	return c
}

// Held is what one class holds in etcd: its keys and their bytes.
type Held struct {
	Class string `json:"class"`
	Keys  int    `json:"keys"`
	Bytes int64  `json:"bytes"`
}

// Holding is the keys and bytes the classes that hold keys hold: the
// events past their TTL, the events with no lease (one event may be
// both: counted in each), and every key of the leases over the limit.
func (a *Audit) Holding() []Held {
	sum := func(class string, es []Event) Held {
		h := Held{Class: class, Keys: len(es)}
		for _, e := range es {
			h.Bytes += e.Bytes
		}
		return h
	}
	big := Held{Class: ClassBig}
	for _, l := range a.Big {
		big.Keys += l.Keys
		big.Bytes += l.Bytes
	}
	return []Held{sum(ClassPastTTL, a.PastTTL), sum(ClassNoLease, a.NoLease), big}
}

// Run audits store's keyspace: one pass over every key with its value (a
// key's lease comes with it; an index-only read of keys does not carry it).
func Run(ctx context.Context, store etcdscan.Store, o Options) (*Audit, error) {
	t := NewTally(o, store.Revision())
	err := store.Range(ctx, t.o.Registry, etcdscan.PrefixEnd(t.o.Registry), false, func(kv *mvccpb.KeyValue) error {
		t.Observe(ctx, kv)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the keys under %s at revision %d: %w", t.o.Registry, t.a.Revision, err)
	}
	return t.Finish(ctx), nil
}

// event judges one event: its age by its last write, and its lease.
func (a *Audit) event(kv *mvccpb.KeyValue, size int64, prefix string, now time.Time, o Options) {
	a.Events++
	e := Event{Key: string(kv.Key), Lease: kv.Lease, ModRevision: kv.ModRevision, Bytes: size}
	e.Namespace, _, _ = strings.Cut(strings.TrimPrefix(e.Key, prefix), "/")
	if kv.Lease == 0 {
		a.NoLease = append(a.NoLease, e)
	}
	obj, _, err := decode.Typed(kv.Value)
	ev, ok := obj.(*corev1.Event)
	if err != nil || !ok {
		a.Unread = append(a.Unread, e.Key)
		return
	}
	e.Reason, e.Age = ev.Reason, now.Sub(lastWritten(ev))
	if kv.Lease == 0 {
		a.NoLease[len(a.NoLease)-1] = e
	}
	// Its creation time is kube-apiserver's clock at its create revision:
	// a bound on the writes of every revision before it.
	if !ev.CreationTimestamp.IsZero() {
		a.created = append(a.created, created{rev: kv.CreateRevision, at: ev.CreationTimestamp.Time})
	}
	if !o.NoAges && e.Age > o.EventTTL+o.LeaseReuse {
		a.candidates = append(a.candidates, e)
	}
}

// creation notes when kube-apiserver created the object under kv, by its
// clock (metadata.creationTimestamp), at kv's create revision: every
// object's creation bounds the writes before it, not only an event's.
func (a *Audit) creation(kv *mvccpb.KeyValue, o Options) {
	if o.NoAges {
		return // no age is judged: what bounds one is not needed
	}
	obj, err := decode.Meta(kv.Value)
	if err != nil || obj.Meta.CreationTimestamp.IsZero() {
		return
	}
	a.created = append(a.created, created{rev: kv.CreateRevision, at: obj.Meta.CreationTimestamp.Time})
}

// created is an object's create revision and kube-apiserver's clock then.
type created struct {
	rev int64
	at  time.Time
}

// clockSkew is how far kube-apiservers' clocks may disagree (NTP keeps
// them within milliseconds; a server that drifts further is a fault of its
// own): an event's
// creation time bounds an earlier write within it.
const clockSkew = 30 * time.Second

// judgePast keeps, of the events whose own timestamps say they are past
// the TTL, those the servers' clocks say so too (the reporting client's
// clock, or an events.k8s.io series written late, never decides alone):
// the event's last write (its mod revision) came before the next event
// kube-apiserver created, whose creation time is the API server's clock.
// A creation time earlier than the creations before it is not the API
// server's clock then (an event written back by a restore keeps its old
// one) and bounds nothing. An event under a lease granted for longer than
// the event TTL is judged against its lease.
func (a *Audit) judgePast(ctx context.Context, now time.Time, o Options) {
	sort.Slice(a.created, func(i, j int) bool { return a.created[i].rev < a.created[j].rev })
	var genuine []created
	var latest time.Time
	for _, c := range a.created {
		if !latest.IsZero() && c.at.Before(latest.Add(-clockSkew)) {
			continue
		}
		genuine = append(genuine, c)
		if c.at.After(latest) {
			latest = c.at
		}
	}
	granted := map[int64]time.Duration{}
	for _, e := range a.candidates {
		i := sort.Search(len(genuine), func(i int) bool { return genuine[i].rev > e.ModRevision })
		if i == len(genuine) {
			continue // no event created since: nothing bounds its age
		}
		e.WrittenBefore = genuine[i].at.Add(clockSkew)
		ttl := o.EventTTL
		switch {
		case e.Lease != 0 && o.LeaseIsTTL:
			// kine: the "lease" is the TTL the key was put with.
			ttl = max(ttl, time.Duration(e.Lease)*time.Second)
		case e.Lease != 0 && o.LeaseTTL != nil:
			g, ok := granted[e.Lease]
			if !ok {
				g = -1
				if s, err := o.LeaseTTL(ctx, e.Lease); err == nil {
					g = time.Duration(s) * time.Second
				}
				granted[e.Lease] = g
			}
			if g < 0 {
				// Its lease's TTL could not be read: not judged.
				a.Unread = append(a.Unread, e.Key)
				continue
			}
			ttl = max(ttl, g)
		}
		if now.Sub(e.WrittenBefore) > ttl+o.LeaseReuse {
			a.PastTTL = append(a.PastTTL, e)
		}
	}
	a.candidates, a.created = nil, nil
}

// identity judges one apiserver identity lease: renewed lately, or by no
// server.
func (a *Audit) identity(kv *mvccpb.KeyValue, now time.Time) {
	obj, _, err := decode.Typed(kv.Value)
	l, ok := obj.(*coordinationv1.Lease)
	if err != nil || !ok {
		// Named, never skipped: whether its server is gone is not known.
		a.Unread = append(a.Unread, string(kv.Key))
		return
	}
	if l.Spec.RenewTime == nil {
		return
	}
	since := now.Sub(l.Spec.RenewTime.Time)
	if since <= staleAfter*identityRenewal {
		return
	}
	if l.Labels["apiserver.kubernetes.io/identity"] != "kube-apiserver" {
		return // not kube-apiserver's identity lease: named alike, not judged
	}
	id := Identity{Key: string(kv.Key), Since: since}
	if l.Spec.HolderIdentity != nil {
		id.Holder = *l.Spec.HolderIdentity
	}
	if l.Spec.LeaseDurationSeconds != nil {
		// kube-apiserver's garbage collector deletes an identity lease
		// expired for its own period (an hour) or more: until then one
		// not renewed is normal after a server left.
		id.Expired = since > time.Duration(*l.Spec.LeaseDurationSeconds)*time.Second+identityGC
	}
	if !id.Expired {
		return
	}
	a.Identities = append(a.Identities, id)
}

// open is kv with its value decrypted when it is encrypted at rest and
// o can open it (as stored otherwise).
func open(ctx context.Context, o Options, kv *mvccpb.KeyValue) *mvccpb.KeyValue {
	if o.Open == nil || !strings.HasPrefix(string(kv.Value), "k8s:enc:") {
		return kv
	}
	plain, err := o.Open(ctx, string(kv.Key), kv.Value)
	if err != nil {
		return kv
	}
	return &mvccpb.KeyValue{Key: kv.Key, Value: plain, Lease: kv.Lease, ModRevision: kv.ModRevision, CreateRevision: kv.CreateRevision, Version: kv.Version}
}

// portOf is the port a masterlease's Endpoints names (0 when it does not
// read).
func portOf(value []byte) int32 {
	obj, _, err := decode.Typed(value)
	ep, ok := obj.(*corev1.Endpoints)
	if err != nil || !ok {
		return 0
	}
	for _, s := range ep.Subsets {
		for _, p := range s.Ports {
			return p.Port
		}
	}
	return 0
}

// lastWritten is when kube-apiserver last wrote ev, as the event says: its
// TTL counts from that write.
func lastWritten(ev *corev1.Event) time.Time {
	t := ev.CreationTimestamp.Time
	for _, c := range []time.Time{ev.LastTimestamp.Time, ev.FirstTimestamp.Time, ev.EventTime.Time} {
		if c.After(t) {
			t = c
		}
	}
	if ev.Series != nil && ev.Series.LastObservedTime.After(t) {
		t = ev.Series.LastObservedTime.Time
	}
	return t
}

func (o Options) withDefaults() Options {
	if o.Registry == "" {
		o.Registry = "/registry/"
	}
	if o.EventTTL <= 0 {
		o.EventTTL = DefaultEventTTL
	}
	if o.LeaseReuse <= 0 {
		o.LeaseReuse = DefaultLeaseReuse
	}
	if o.MaxObjectCount <= 0 {
		o.MaxObjectCount = DefaultMaxObjectCount
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}
