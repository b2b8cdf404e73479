package leases

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/nodeconfig"
)

var now = time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)

func event(t *testing.T, ns, name, reason string, last time.Time) string {
	t.Helper()
	return etcdtest.Encode(t, &corev1.Event{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Event"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(last.Add(-time.Minute))},
		Reason:     reason, LastTimestamp: metav1.NewTime(last)})
}

// eventAt is an event kube-apiserver created at created (its clock), last
// reported at last (the reporting client's clock).
func eventAt(t *testing.T, ns, name, reason string, created, last time.Time) string {
	t.Helper()
	return etcdtest.Encode(t, &corev1.Event{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Event"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(created)},
		Reason:     reason, LastTimestamp: metav1.NewTime(last)})
}

func identity(t *testing.T, holder string, renewed time.Time) string {
	t.Helper()
	d := int32(3600)
	return etcdtest.Encode(t, &coordinationv1.Lease{TypeMeta: metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "apiserver-" + holder, Labels: map[string]string{"apiserver.kubernetes.io/identity": "kube-apiserver"}},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &d, RenewTime: &metav1.MicroTime{Time: renewed}}})
}

// TestAuditClasses: each class found exactly. Events past the TTL (plus
// the lease reuse) by their last write; young events never; an event
// without a lease; a lease holding more keys than the limit; a key under a
// lease that is neither an event nor a masterlease; keyless leases counted
// but no fault; a masterlease nobody answers at; an identity lease no
// server renews.
func TestAuditClasses(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	ctx := context.Background()
	grant := func() clientv3.LeaseID {
		l, err := cli.Grant(ctx, 3600)
		if err != nil {
			t.Fatal(err)
		}
		return l.ID
	}
	put := func(key, value string, lease clientv3.LeaseID) {
		opts := []clientv3.OpOption{}
		if lease != 0 {
			opts = append(opts, clientv3.WithLease(lease))
		}
		if _, err := cli.Put(ctx, key, value, opts...); err != nil {
			t.Fatal(err)
		}
	}
	events, big, other, keyless := grant(), grant(), grant(), grant()
	_ = keyless
	put("/registry/events/shop/old.1", event(t, "shop", "old.1", "BackOff", now.Add(-3*time.Hour)), events)
	// Created two hours ago, reported again five minutes ago: no fault, and
	// its creation is the servers' clock after old.1's write.
	put("/registry/events/shop/mid.1", eventAt(t, "shop", "mid.1", "Pulled", now.Add(-2*time.Hour), now.Add(-5*time.Minute)), events)
	put("/registry/events/shop/young.1", event(t, "shop", "young.1", "Pulled", now.Add(-30*time.Minute)), events)
	// Written now by a kubelet whose clock is three hours behind: its own
	// timestamps say it is old, the servers' clocks say it is young.
	put("/registry/events/shop/skewed.1", event(t, "shop", "skewed.1", "Pulled", now.Add(-3*time.Hour)), events)
	put("/registry/events/shop/edge.1", event(t, "shop", "edge.1", "Pulled", now.Add(-time.Hour-30*time.Second)), events)
	put("/registry/events/web/restored.1", event(t, "web", "restored.1", "Killing", now.Add(-10*time.Minute)), 0)
	for i := range 12 {
		put(fmt.Sprintf("/registry/events/load/e%02d", i), event(t, "load", fmt.Sprintf("e%02d", i), "Scheduled", now.Add(-time.Minute)), big)
	}
	put("/registry/configmaps/app/leased", "x", other)
	put("/registry/masterleases/10.0.0.1", "ep", other)
	put("/registry/peerserverleases/apiserver-abc", "ep", other)
	put("/registry/masterleases/10.0.0.9", "ep", other)
	put("/registry/masterleases/10.0.0.7", "ep", 0) // written back without its lease: never expires
	put("/registry/leases/kube-system/apiserver-live", identity(t, "live", now.Add(-5*time.Second)), 0)
	put("/registry/leases/kube-system/apiserver-torn", "k8s\x00\xff", 0) // damaged: named, not skipped
	put("/registry/leases/kube-system/apiserver-gone", identity(t, "gone", now.Add(-3*time.Hour)), 0)
	// Gone 90 minutes: kube-apiserver's collector has not passed yet.
	put("/registry/leases/kube-system/apiserver-leaving", identity(t, "leaving", now.Add(-90*time.Minute)), 0)
	store, err := etcdscan.NewEtcdStore(ctx, cli, 5)
	if err != nil {
		t.Fatal(err)
	}
	// The masterleases are asked at once: each call waits until a second
	// is under way (or gives up after a while, and the test says so).
	var asking sync.WaitGroup
	asking.Add(2)
	together := make(chan struct{})
	go func() { asking.Wait(); close(together) }()
	var once sync.Map
	opts := Options{MaxObjectCount: 10, Now: func() time.Time { return now },
		Granted: func(ctx context.Context) ([]int64, error) {
			r, err := cli.Leases(ctx)
			if err != nil {
				return nil, err
			}
			var ids []int64
			for _, l := range r.Leases {
				ids = append(ids, int64(l.ID))
			}
			return ids, nil
		},
		Serves: func(_ context.Context, ip string, _ int32) string {
			if _, seen := once.LoadOrStore(ip, true); !seen && ip != "10.0.0.7" {
				asking.Done()
			}
			select {
			case <-together:
			case <-time.After(20 * time.Second):
				return "asked alone"
			}
			if ip == "10.0.0.9" {
				return "connection refused"
			}
			return ""
		}}
	a, err := Run(ctx, store, opts)
	if err != nil {
		t.Fatal(err)
	}
	keys := func(es []Event) []string {
		var out []string
		for _, e := range es {
			out = append(out, e.Key)
		}
		return out
	}
	if got := keys(a.PastTTL); !slices.Equal(got, []string{"/registry/events/shop/old.1"}) {
		t.Errorf("past the TTL: %v", got)
	}
	if got := keys(a.NoLease); !slices.Equal(got, []string{"/registry/events/web/restored.1"}) {
		t.Errorf("no lease: %v", got)
	}
	if len(a.Big) != 1 || a.Big[0].ID != int64(big) || a.Big[0].Keys != 12 {
		t.Errorf("big leases: %+v", a.Big)
	}
	if len(a.Unexpected) != 1 || a.Unexpected[0].Key != "/registry/configmaps/app/leased" {
		t.Errorf("unexpected: %+v", a.Unexpected)
	}
	if a.Granted != 4 || a.Keyless != 1 {
		t.Errorf("granted %d, keyless %d", a.Granted, a.Keyless)
	}
	var notServed []string
	for _, m := range a.MasterLeases {
		if m.NotServed != "" {
			notServed = append(notServed, m.IP)
		}
	}
	stale := 0
	for _, m := range a.MasterLeases {
		if m.Stale() {
			stale++
		}
	}
	if !slices.Equal(notServed, []string{"10.0.0.9"}) || len(a.MasterLeases) != 3 || stale != 2 {
		t.Errorf("masterleases: %+v", a.MasterLeases)
	}
	if len(a.Identities) != 1 || a.Identities[0].Holder != "gone" || !a.Identities[0].Expired {
		t.Errorf("identities: %+v", a.Identities)
	}
	if !slices.Equal(a.Unread, []string{"/registry/leases/kube-system/apiserver-torn"}) {
		t.Errorf("unread: %v", a.Unread)
	}
	if a.Events != 18 || a.Faults() != 7 {
		t.Errorf("events %d, faults %d", a.Events, a.Faults())
	}

	// The same audit from another reader's pass (the scan's, the
	// exporter's): a range of part of the registry is not observed, the
	// whole registry's is, key by key as the reader gets it.
	tally := NewTally(opts, store.Revision())
	w := tally.Wrap(store)
	if _, ok := w.(etcdscan.Counter); !ok {
		t.Error("the wrapped store lost its Counter")
	}
	if u, ok := w.(etcdscan.Wrapper); !ok || u.Unwrap() != etcdscan.Store(store) {
		t.Error("the wrapped store does not unwrap to the store (a db file's fault guard is lost)")
	}
	if err := w.Range(ctx, "/registry/events/", etcdscan.PrefixEnd("/registry/events/"), false, func(*mvccpb.KeyValue) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if tally.Observed() {
		t.Error("a range of the events alone was taken for the pass")
	}
	read := 0
	if err := w.Range(ctx, "/registry/", etcdscan.PrefixEnd("/registry/"), false, func(*mvccpb.KeyValue) error { read++; return nil }); err != nil {
		t.Fatal(err)
	}
	b := tally.Finish(ctx)
	want, _ := json.Marshal(a)
	got, _ := json.Marshal(b)
	if !tally.Observed() || read != 27 || string(got) != string(want) {
		t.Errorf("from another pass (observed %v, %d keys read to the reader):\n%s\nwant\n%s", tally.Observed(), read, got, want)
	}
}

// TestJudgedSettings: a flag wins, then this node's kube-apiserver
// manifest, then kube-apiserver's defaults; the line says which.
func TestJudgedSettings(t *testing.T) {
	node := &nodeconfig.Found{Source: "/etc/kubernetes/manifests/kube-apiserver.yaml", EventTTL: 3 * time.Hour}
	o, said := Judged(Options{}, Given{}, node)
	if o.EventTTL != 3*time.Hour || o.MaxObjectCount != DefaultMaxObjectCount || o.LeaseReuse != DefaultLeaseReuse ||
		!strings.Contains(said, "event TTL 3h0m0s (--event-ttl in /etc/kubernetes/manifests/kube-apiserver.yaml)") ||
		!strings.Contains(said, "lease reuse 1m0s (kube-apiserver's default)") {
		t.Errorf("from the manifest: %+v, %q", o, said)
	}
	o, said = Judged(Options{}, Given{EventTTL: time.Hour}, node)
	if o.EventTTL != time.Hour || !strings.Contains(said, "event TTL 1h0m0s (--event-ttl)") {
		t.Errorf("given: %+v, %q", o, said)
	}
	k3s := &nodeconfig.Found{Source: "k3s embedded etcd (/var/lib/rancher/k3s/server/tls/etcd)", EventTTL: 2 * time.Hour, LeaseFlagsFrom: "k3s's kube-apiserver-arg in /etc/rancher/k3s/config.yaml(.d)"}
	if o, said := Judged(Options{}, Given{}, k3s); o.EventTTL != 2*time.Hour || !strings.Contains(said, "(--event-ttl in k3s's kube-apiserver-arg in /etc/rancher/k3s/config.yaml(.d))") {
		t.Errorf("k3s: %+v, %q", o, said)
	}
	if o, _ := Judged(Options{}, Given{}, nil); o.EventTTL != DefaultEventTTL || o.MaxObjectCount != DefaultMaxObjectCount {
		t.Errorf("defaults: %+v", o)
	}
}

// TestShorterThanConfigured: a removal refuses an --event-ttl shorter than
// the one this node's kube-apiserver runs with; longer, equal or without a
// configuration found, it goes on.
func TestShorterThanConfigured(t *testing.T) {
	node := &nodeconfig.Found{Source: "/etc/kubernetes/manifests/kube-apiserver.yaml", EventTTL: 3 * time.Hour}
	for _, tt := range []struct {
		given  time.Duration
		node   *nodeconfig.Found
		refuse bool
	}{
		{time.Hour, node, true},
		{3 * time.Hour, node, false},
		{4 * time.Hour, node, false},
		{0, node, false},
		{time.Hour, nil, false},
	} {
		err := ShorterThanConfigured(Given{EventTTL: tt.given}, tt.node)
		if (err != nil) != tt.refuse {
			t.Errorf("--event-ttl %s against %v: %v", tt.given, tt.node, err)
		}
	}
}

// TestMasterLeasesAsked: a masterlease names no port (the lease reconciler
// writes none), so its address is asked at the port the default/kubernetes
// Endpoints name; when no address answers although the API server did,
// this machine cannot reach them and none is judged stale; one asked when
// the command's time ran out is not judged either.
func TestMasterLeasesAsked(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	ctx := context.Background()
	kube := etcdtest.Encode(t, &corev1.Endpoints{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Endpoints"}, ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes"},
		Subsets: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: "10.0.0.1"}}, Ports: []corev1.EndpointPort{{Name: "https", Port: 6443}}}}})
	etcdtest.Put(t, cli, "/registry/services/endpoints/default/kubernetes", kube)
	l, err := cli.Grant(ctx, 15)
	if err != nil {
		t.Fatal(err)
	}
	for _, ip := range []string{"10.0.0.1", "10.0.0.9"} {
		if _, err := cli.Put(ctx, "/registry/masterleases/"+ip, "ep", clientv3.WithLease(l.ID)); err != nil {
			t.Fatal(err)
		}
	}
	store, err := etcdscan.NewEtcdStore(ctx, cli, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		answers   map[string]bool
		ctx       func() context.Context
		stale     []string
		notJudged int
	}{
		{"the port of the kubernetes Endpoints", map[string]bool{"10.0.0.1:6443": true}, context.Background, []string{"10.0.0.9"}, 0},
		{"none answers from here", map[string]bool{}, context.Background, nil, 2},
		{"time ran out", map[string]bool{"10.0.0.1:6443": true}, func() context.Context {
			c, cancel := context.WithCancel(context.Background())
			cancel()
			return c
		}, nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := Run(ctx, store, Options{Now: func() time.Time { return now }, Serves: func(_ context.Context, ip string, port int32) string {
				if tc.answers[fmt.Sprintf("%s:%d", ip, port)] {
					return ""
				}
				if err := tc.ctx().Err(); err != nil {
					return err.Error()
				}
				return "connection refused"
			}})
			if err != nil {
				t.Fatal(err)
			}
			// Asked again with the test's context, as Finish is.
			if tc.ctx != nil && tc.ctx() != context.Background() {
				ms := slices.Clone(a.MasterLeases)
				for i := range ms {
					ms[i].Asked, ms[i].NotServed, ms[i].Unasked = false, "", ""
				}
				askMasterLeases(tc.ctx(), ms, func(c context.Context, ip string, port int32) string {
					if tc.answers[fmt.Sprintf("%s:%d", ip, port)] {
						return ""
					}
					return "dial: " + c.Err().Error()
				})
				a.MasterLeases = ms
			}
			var stale []string
			notJudged := 0
			for _, m := range a.MasterLeases {
				if m.Stale() {
					stale = append(stale, m.IP)
				}
				if !m.Asked && m.Unasked != "" {
					notJudged++
				}
				if m.Port != 6443 {
					t.Errorf("%s asked at port %d, want the kubernetes Endpoints' 6443", m.IP, m.Port)
				}
			}
			if strings.Join(stale, " ") != strings.Join(tc.stale, " ") || notJudged != tc.notJudged {
				t.Errorf("stale %v (want %v), not judged %d (want %d): %+v", stale, tc.stale, notJudged, tc.notJudged, a.MasterLeases)
			}
		})
	}
}

// TestEventAgainstItsLease: an event is judged against its lease when the
// lease was granted for longer than the event TTL; on kine the "lease" is
// the TTL in seconds the key was put with; a lease whose TTL cannot be read
// leaves its events not judged, never judged against the event TTL alone.
func TestEventAgainstItsLease(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	ctx := context.Background()
	// Written three hours ago by its timestamps; an object created two
	// hours ago bounds its write in etcd.
	const lease = 10800 // on kine: a TTL of three hours
	if _, err := cli.Put(ctx, "/registry/events/shop/old.1", event(t, "shop", "old.1", "BackOff", now.Add(-3*time.Hour))); err != nil {
		t.Fatal(err)
	}
	etcdtest.Put(t, cli, "/registry/events/shop/later.1", eventAt(t, "shop", "later.1", "Pulled", now.Add(-2*time.Hour), now.Add(-2*time.Hour)))
	store, err := etcdscan.NewEtcdStore(ctx, cli, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		o      Options
		past   bool
		unread bool
	}{
		{"etcd, the lease granted for the event TTL", Options{LeaseTTL: func(context.Context, int64) (int64, error) { return 3600, nil }}, true, false},
		{"etcd, the lease granted for three hours", Options{LeaseTTL: func(context.Context, int64) (int64, error) { return lease, nil }}, false, false},
		{"etcd, the lease's TTL not read", Options{LeaseTTL: func(context.Context, int64) (int64, error) { return 0, fmt.Errorf("unavailable") }}, false, true},
		{"kine, a TTL of three hours", Options{LeaseIsTTL: true}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.Now = func() time.Time { return now }
			tally := NewTally(tc.o, store.Revision())
			err := store.Range(ctx, "/registry/", etcdscan.PrefixEnd("/registry/"), false, func(kv *mvccpb.KeyValue) error {
				if string(kv.Key) == "/registry/events/shop/old.1" {
					kv = &mvccpb.KeyValue{Key: kv.Key, Value: kv.Value, ModRevision: kv.ModRevision, CreateRevision: kv.CreateRevision, Lease: lease}
				}
				tally.Observe(ctx, kv)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			a := tally.Finish(ctx)
			if past := len(a.PastTTL) == 1; past != tc.past {
				t.Errorf("past the TTL: %+v, want %v", a.PastTTL, tc.past)
			}
			if unread := slices.Contains(a.Unread, "/registry/events/shop/old.1"); unread != tc.unread {
				t.Errorf("not judged: %v, want %v", a.Unread, tc.unread)
			}
		})
	}
}
