package session

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/etcdconn"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/leases"
	"github.com/regghost/regghost/pkg/nodeconfig"
	"github.com/regghost/regghost/pkg/notice"
	"github.com/regghost/regghost/pkg/pace"
)

func TestOpenAndScan(t *testing.T) {
	cli, ep := etcdtest.Start(t)
	ctx := context.Background()
	ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: "default", UID: "u1"}}
	etcdtest.Put(t, cli, "/registry/namespaces/default", etcdtest.Encode(t, ns))
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "gone", UID: "u2"}}
	etcdtest.Put(t, cli, "/registry/configmaps/gone/c", etcdtest.Encode(t, cm))
	// An event written back under no lease: the scan's own pass audits it.
	ev := &corev1.Event{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Event"}, ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "default", UID: "u3"}, Reason: "Pulled"}
	etcdtest.Put(t, cli, "/registry/events/default/e", etcdtest.Encode(t, ev))

	for _, tc := range []struct {
		name  string
		reads Reads
	}{
		{"streamed", ScanReads()},
		{"paged", Reads{PageSize: 1}},
		{"paced by etcd's latency", Reads{PageSize: 500, Stream: true, MaxKeysPerSecond: 100000, Adaptive: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var notices []notice.Notice
			s := &Settings{Etcd: etcdconn.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second, CommandTimeout: time.Minute},
				Prefix: "/registry/", NoAPI: true, Notices: notice.Collect(&notices)}
			r, err := s.Open(ctx, tc.reads)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if r.API != nil || r.Why != "--no-api given" {
				t.Fatalf("API %v, why %q", r.API, r.Why)
			}
			ended := false
			rep, err := r.Scan(ctx, ScanOptions{TerminatingAfter: time.Hour, APICheckLimit: 1, Now: time.Now, Leases: &leases.Options{},
				Progress: func() (notice.Progress, func()) { return func(int, int) {}, func() { ended = true } }})
			if err != nil {
				t.Fatal(err)
			}
			defer rep.Close()
			var keys []string
			if err := rep.Each(func(f *etcdscan.Finding) error {
				keys = append(keys, f.Key)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if len(keys) != 1 || keys[0] != "/registry/configmaps/gone/c" {
				t.Fatalf("findings %v, want the ConfigMap of the gone namespace", keys)
			}
			if !ended {
				t.Error("the progress display was not ended")
			}
			if rep.Leases[leases.ClassNoLease] != 1 || rep.Leases[leases.ClassPastTTL] != 0 {
				t.Errorf("leases %v, want the event under no lease counted from the scan's pass", rep.Leases)
			}
			found := false
			for _, c := range rep.Checks {
				found = found || c.Name == "dangling references"
			}
			if !found {
				t.Errorf("no dangling references check in %+v", rep.Checks)
			}
			// Without Given, discovery takes nothing and says nothing.
			if len(notices) != 0 {
				t.Errorf("notices %q", notice.Texts(notices))
			}
		})
	}
}

func TestDiscoverLeavesGivenSettings(t *testing.T) {
	// A node root with no kube-apiserver manifest: nothing is found,
	// nothing changes, and what is used is said with where it came from.
	var notices []notice.Notice
	s := &Settings{Etcd: etcdconn.Config{Endpoints: []string{"127.0.0.1:1"}}, Prefix: "/registry/", NodeRoot: t.TempDir(),
		Notices: notice.Collect(&notices), Given: func() nodeconfig.Given { return nodeconfig.Given{} }}
	s.Discover()
	if len(notices) != 0 {
		t.Errorf("discovery alone said %q: a usage error found before connecting would not be one line", notice.Texts(notices))
	}
	s.SayUsing()
	s.SayUsing()
	if s.Etcd.Endpoints[0] != "127.0.0.1:1" || s.Prefix != "/registry/" || strings.Join(notice.Texts(notices), "\n") != "using etcd 127.0.0.1:1 (default), prefix /registry/ (default)" {
		t.Fatalf("settings changed: %+v, notices %q", s.Etcd.Endpoints, notice.Texts(notices))
	}
}

func TestAPIWithoutServer(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    *Settings
		why  string
	}{
		{"no-api", &Settings{NoAPI: true}, "--no-api"},
		{"db file", &Settings{DB: "/tmp/x.db"}, "offline"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			view, why := tc.s.API()
			if view != nil || !strings.Contains(why, tc.why) {
				t.Fatalf("view %v, why %q", view, why)
			}
		})
	}
}

// TestAdaptivePaceWithoutProbe: when no probe answers (an etcd user who may
// not read where the probe reads), the read goes on at the lowest pace
// instead of failing.
func TestAdaptivePaceWithoutProbe(t *testing.T) {
	p, err := pace.New(func(context.Context) error { return errors.New("permission denied") }, pace.Config{Max: 100000, Min: 50000, Timeout: 10 * time.Millisecond, Every: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = p.Run(ctx) }()
	o := &orLowest{p: p, lowest: rate.NewLimiter(50000, 5000)}
	for range 3 {
		if err := o.Wait(ctx, 1000); err != nil {
			t.Fatalf("Wait: %v, want the lowest pace", err)
		}
	}
}
