package exporter

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/apiview"
	"github.com/regghost/regghost/pkg/decrypt"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/leases"
)

// TestAuditLeases: the leases series come from the scan's own pass (the
// audit reads nothing of its own): events past their TTL and without a
// lease by namespace, every class counted (0 included), the bytes the
// classes hold and the biggest lease; a namespace beyond the limit is
// "other".
func TestAuditLeases(t *testing.T) {
	cli, ep := etcdtest.Start(t)
	ctx := context.Background()
	now := time.Now()
	event := func(ns, name string, created time.Time) string {
		return etcdtest.Encode(t, &corev1.Event{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Event"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(created)}, Reason: "BackOff", LastTimestamp: metav1.NewTime(created)})
	}
	lease, err := cli.Grant(ctx, 3600)
	if err != nil {
		t.Fatal(err)
	}
	put := func(key, value string, opts ...clientv3.OpOption) {
		if _, err := cli.Put(ctx, key, value, opts...); err != nil {
			t.Fatal(err)
		}
	}
	old := event("shop", "old.1", now.Add(-3*time.Hour))
	put("/registry/events/shop/old.1", old, clientv3.WithLease(lease.ID))
	old2 := event("web", "old.2", now.Add(-3*time.Hour))
	put("/registry/events/web/old.2", old2, clientv3.WithLease(lease.ID))
	// Written back without a lease (by a restore) in between: no lease, young by the servers' clocks.
	put("/registry/events/web/back.1", event("web", "back.1", now.Add(-150*time.Minute)))
	// Created after them, by the servers' clock: their writes came before.
	put("/registry/events/shop/new.1", event("shop", "new.1", now.Add(-time.Minute)), clientv3.WithLease(lease.ID))
	c := NewCollector(nil)
	scanned := 0
	scan := func(ctx context.Context, in ScanInput) (*etcdscan.Report, error) {
		rep, err := etcdscan.Scan(ctx, in.Store, etcdscan.Options{APIUnavailable: "test"})
		if err == nil {
			scanned = rep.ScannedKeys
		}
		return rep, err
	}
	src := NewSource(SourceOptions{
		Connect: func(context.Context) (*clientv3.Client, error) {
			return clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		},
		LoadDecrypter: func(context.Context) (*decrypt.Decrypter, error) { return nil, nil },
		OpenAPI:       func() (*apiview.View, string) { return nil, "--no-api given" },
		DialTimeout:   5 * time.Second, PageSize: etcdscan.DefaultPageSize, Stream: true,
		Scan: c.AuditLeases(1, func(ctx context.Context, in ScanInput) leases.Options {
			return leases.Options{MaxObjectCount: 2}.From(ctx, leases.Source{Client: in.Client})
		}, scan),
	})
	defer src.Close()
	rep, err := src.Scan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rep.Close()
	if scanned != 4 {
		t.Errorf("the scan read %d keys, want 4: the audit took keys from it", scanned)
	}
	got := series(t, c, "regghost_e")
	pastBytes := len("/registry/events/shop/old.1") + len(old) + len("/registry/events/web/old.2") + len(old2)
	want := []string{
		"regghost_etcd_lease_findings{class=apiserver-identities-stale} 0",
		"regghost_etcd_lease_findings{class=events-past-ttl} 2",
		"regghost_etcd_lease_findings{class=events-without-lease} 1",
		"regghost_etcd_lease_findings{class=leased-unexpected} 0",
		"regghost_etcd_lease_findings{class=leases-keyless} 0",
		"regghost_etcd_lease_findings{class=leases-over-limit} 1",
		"regghost_etcd_lease_findings{class=masterleases-stale} 0",
		"regghost_etcd_lease_findings{class=values-not-judged} 0",
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("no series %s in\n%v", w, got)
		}
	}
	for _, w := range []string{"regghost_events_past_ttl{namespace=other} 1", "regghost_events_without_lease{namespace=web} 1", "regghost_etcd_lease_max_keys{} 3"} {
		if !slices.Contains(got, w) {
			t.Errorf("no series %s in\n%v", w, got)
		}
	}
	if !slices.ContainsFunc(got, func(s string) bool {
		return s == "regghost_events_past_ttl{namespace=shop} 1" || s == "regghost_events_past_ttl{namespace=web} 1"
	}) {
		t.Errorf("neither namespace past the TTL kept its name (limit 1): %v", got)
	}
	if w := fmt.Sprintf("regghost_etcd_lease_held_bytes{class=events-past-ttl} %d", pastBytes); !slices.Contains(got, w) {
		t.Errorf("no series %s in\n%v", w, got)
	}
}
