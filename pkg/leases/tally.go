package leases

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/regghost/regghost/pkg/etcdscan"
)

// Tally is an audit built from a pass over the keyspace made by someone
// else (the scan's, the exporter's): each key the pass reads is observed
// once, and Finish judges what was seen. No key is read twice.
type Tally struct {
	o       Options
	a       *Audit
	now     time.Time
	byLease map[int64]*Lease
	// prefixes of the keys judged.
	events, masters, peers, identities string
	// kubernetes is the default/kubernetes Service's Endpoints key, and
	// kubePort the port it names: the one kube-apiservers serve at (a
	// masterlease names only an address).
	kubernetes string
	kubePort   int32

	mu   sync.Mutex
	pass *etcdscan.Pass
}

// NewTally starts an audit of the keyspace at revision.
func NewTally(o Options, revision int64) *Tally {
	o = o.withDefaults()
	return &Tally{o: o, now: o.Now(), byLease: map[int64]*Lease{},
		a: &Audit{Registry: o.Registry, NoAges: o.NoAges, LeaseIsTTL: o.LeaseIsTTL, Revision: revision, EventTTL: o.EventTTL, LeaseReuse: o.LeaseReuse, MaxObjectCount: o.MaxObjectCount, Granted: -1, Keyless: -1,
			PastTTL: []Event{}, NoLease: []Event{}, Big: []Lease{}, Unexpected: []Key{}, MasterLeases: []MasterLease{}, Identities: []Identity{}, Unread: []string{}},
		events: o.Registry + "events/", masters: o.Registry + "masterleases/",
		// peers are kube-apiserver's peer endpoint leases (its
		// mixed-version proxy), put under a lease as masterleases are.
		peers: o.Registry + "peerserverleases/", identities: o.Registry + "leases/kube-system/apiserver-",
		kubernetes: o.Registry + "services/endpoints/default/kubernetes"}
}

// Observe judges one key of the pass, with its value.
func (t *Tally) Observe(ctx context.Context, kv *mvccpb.KeyValue) {
	a, o := t.a, t.o
	key := string(kv.Key)
	size := int64(len(kv.Key) + len(kv.Value))
	if kv.Lease != 0 {
		a.LeasedKeys++
		l := t.byLease[kv.Lease]
		if l == nil {
			l = &Lease{ID: kv.Lease, ByResource: map[string]int{}}
			t.byLease[kv.Lease] = l
		}
		l.Keys++
		l.Bytes += size
		res, _, _ := strings.Cut(strings.TrimPrefix(key, o.Registry), "/")
		l.ByResource[res]++
		if !strings.HasPrefix(key, t.events) && !strings.HasPrefix(key, t.masters) && !strings.HasPrefix(key, t.peers) {
			a.Unexpected = append(a.Unexpected, Key{Key: key, Lease: kv.Lease})
		}
	}
	switch {
	case strings.HasPrefix(key, t.events):
		if o.Namespace == "" || strings.HasPrefix(key, t.events+o.Namespace+"/") {
			a.event(open(ctx, o, kv), size, t.events, t.now, o)
		}
	case strings.HasPrefix(key, t.masters):
		a.MasterLeases = append(a.MasterLeases, MasterLease{Key: key, ModRevision: kv.ModRevision, IP: strings.TrimPrefix(key, t.masters), Lease: kv.Lease, Port: portOf(kv.Value)})
	case strings.HasPrefix(key, t.identities):
		a.identity(open(ctx, o, kv), t.now)
		a.creation(kv, o)
	default:
		if key == t.kubernetes {
			t.kubePort = portOf(open(ctx, o, kv).Value)
		}
		a.creation(kv, o)
	}
}

// Finish judges what the pass saw: the events' ages by the servers'
// clocks, the leases' sizes, the masterleases' addresses (asked at once,
// not one after another) and the keyless leases.
func (t *Tally) Finish(ctx context.Context) *Audit {
	a, o := t.a, t.o
	a.judgePast(ctx, t.now, o)
	for _, l := range t.byLease {
		a.Leases = append(a.Leases, *l)
		if l.Keys > o.MaxObjectCount && !o.LeaseIsTTL {
			a.Big = append(a.Big, *l)
		}
	}
	sort.Slice(a.Leases, func(i, j int) bool {
		if a.Leases[i].Keys != a.Leases[j].Keys {
			return a.Leases[i].Keys > a.Leases[j].Keys
		}
		return a.Leases[i].ID < a.Leases[j].ID
	})
	sort.Slice(a.Big, func(i, j int) bool { return a.Big[i].Keys > a.Big[j].Keys })
	for i := range a.MasterLeases {
		if a.MasterLeases[i].Port == 0 {
			// The lease reconciler writes no port: the one the
			// default/kubernetes Endpoints name is every server's.
			a.MasterLeases[i].Port = t.kubePort
		}
	}
	if o.Serves != nil {
		askMasterLeases(ctx, a.MasterLeases, o.Serves)
	}
	if o.Granted != nil {
		ids, err := o.Granted(ctx)
		if err != nil {
			// kine does not list its leases: the count is left out, said.
			a.GrantedUnread = "etcd's leases could not be listed: " + err.Error()
			return a
		}
		a.Granted, a.Keyless = len(ids), 0
		for _, id := range ids {
			if t.byLease[id] == nil {
				a.Keyless++
			}
		}
	}
	return a
}

// maxAsked is how many masterlease addresses are asked at once.
const maxAsked = 8

// askMasterLeases asks whether a kube-apiserver answers at each
// masterlease's address, several at once: an address that does not
// answer costs its timeout, not every other one's too. An address asked
// when the command's time ran out is not asked, and when none answers
// although the API server did (so one kube-apiserver runs), the probe
// cannot reach them from here (a pod's network, a firewall): none is
// judged.
func askMasterLeases(ctx context.Context, ms []MasterLease, serves func(ctx context.Context, ip string, port int32) string) {
	var wg sync.WaitGroup
	slots := make(chan struct{}, maxAsked)
	for i := range ms {
		wg.Add(1)
		slots <- struct{}{}
		go func(m *MasterLease) {
			defer func() { <-slots; wg.Done() }()
			m.Asked, m.NotServed = true, serves(ctx, m.IP, m.Port)
			if m.NotServed != "" && ctx.Err() != nil {
				m.Asked, m.NotServed, m.Unasked = false, "", "the command's time ran out while it was asked"
			}
		}(&ms[i])
	}
	wg.Wait()
	answered := 0
	for _, m := range ms {
		if m.Asked && m.NotServed == "" {
			answered++
		}
	}
	if answered > 0 || len(ms) == 0 {
		return
	}
	for i := range ms {
		if ms[i].Asked {
			ms[i].Asked, ms[i].NotServed = false, ""
			ms[i].Unasked = fmt.Sprintf("none of the %d masterlease addresses answered from here although the API server did: this machine cannot reach them (a pod's network, a firewall), so none is judged", len(ms))
		}
	}
}

// Wrap is store with the tally observing the pass over the whole
// registry with values (the scan's, the exporter's): the keys come to the
// tally as they come to the reader, with no second read of etcd. Any
// other read goes by untouched.
func (t *Tally) Wrap(store etcdscan.Store) etcdscan.Store {
	w, pass := etcdscan.ObservePass(store, t.o.Registry, t.Observe)
	t.mu.Lock()
	t.pass = pass
	t.mu.Unlock()
	return w
}

// Observed says whether the pass over the whole registry went through
// the store Wrap returned: without it the tally saw nothing, and Finish
// would judge an empty keyspace.
func (t *Tally) Observed() bool {
	t.mu.Lock()
	pass := t.pass
	t.mu.Unlock()
	return pass != nil && pass.Seen()
}
