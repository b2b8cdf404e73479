package space

import (
	"context"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/etcdconn"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/leases"
	"github.com/regghost/regghost/pkg/session"
)

// TestMeasureSaysWhatOutlivesItsLease: space attributes the bytes the
// leases audit's classes hold, from the scan's own pass, live and from a
// db file: an event under no lease, and every key of a lease over the
// limit.
func TestMeasureSaysWhatOutlivesItsLease(t *testing.T) {
	cli, ep := etcdtest.Start(t)
	ctx := context.Background()
	event := func(ns, name string) string {
		return etcdtest.Encode(t, &corev1.Event{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Event"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.Now()}, Reason: "Pulled"})
	}
	lease, err := cli.Grant(ctx, 3600)
	if err != nil {
		t.Fatal(err)
	}
	var bigBytes int64
	for i := range 3 {
		key, value := fmt.Sprintf("/registry/events/load/e%d", i), event("load", fmt.Sprintf("e%d", i))
		bigBytes += int64(len(key) + len(value))
		if _, err := cli.Put(ctx, key, value, clientv3.WithLease(lease.ID)); err != nil {
			t.Fatal(err)
		}
	}
	back := event("shop", "back.1")
	etcdtest.Put(t, cli, "/registry/events/shop/back.1", back)
	want := map[string]leases.Held{
		leases.ClassNoLease: {Class: leases.ClassNoLease, Keys: 1, Bytes: int64(len("/registry/events/shop/back.1") + len(back))},
		leases.ClassBig:     {Class: leases.ClassBig, Keys: 3, Bytes: bigBytes},
		leases.ClassPastTTL: {Class: leases.ClassPastTTL},
	}
	settings := func(db string) *session.Settings {
		return &session.Settings{Etcd: etcdconn.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second, CommandTimeout: time.Minute},
			Prefix: "/registry/", NoAPI: true, DB: db}
	}
	measure := func(t *testing.T, s *session.Settings) {
		r, err := Measure(ctx, s, MeasureOptions{Reads: session.ScanReads(), Top: -1, Leases: &leases.Options{MaxObjectCount: 2},
			Scan: func(ctx context.Context, rs *session.Read) (*etcdscan.Report, error) {
				return rs.Scan(ctx, session.ScanOptions{TerminatingAfter: time.Hour, APICheckLimit: 1, Now: time.Now})
			}})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Leases) != len(want) {
			t.Fatalf("leases %+v, want %+v", r.Leases, want)
		}
		for _, h := range r.Leases {
			if h != want[h.Class] {
				t.Errorf("%s holds %+v, want %+v", h.Class, h, want[h.Class])
			}
		}
	}
	t.Run("live", func(t *testing.T) { measure(t, settings("")) })
	t.Run("db file", func(t *testing.T) { measure(t, settings(saveSnapshot(t, ep))) })
}

// TestAccountUnwraps: the account's store unwraps to the store it counts,
// so a db file's fault guard is found through it.
func TestAccountUnwraps(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	store, err := etcdscan.NewEtcdStore(context.Background(), cli, 0)
	if err != nil {
		t.Fatal(err)
	}
	w := NewAccount(Options{Prefix: "/registry/"}).Wrap(store)
	if u, ok := w.(etcdscan.Wrapper); !ok || u.Unwrap() != etcdscan.Store(store) {
		t.Error("the account's store does not unwrap to the store it counts")
	}
}
