package etcdscan

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/catalog"
)

func encode(t testing.TB, obj runtime.Object) string { return etcdtest.Encode(t, obj) }

func pod(ns, name string) *corev1.Pod {
	return &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name)}}
}

func namespace(name string) *corev1.Namespace {
	return &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// TestScanEmbedded runs scans over an embedded etcd holding ns1 (missing)
// and ns10 (present): the ns1 scan must not read ns10's keys, and small
// pages must give the same result as one large page.
func TestScanEmbedded(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	ctx := context.Background()
	plantEmbedded(t, cli)
	tests := []struct {
		name      string
		namespace string
		pageSize  int64
		want      map[string][]Class
	}{
		{name: "ns1 only", namespace: "ns1", pageSize: 1, want: map[string][]Class{
			"/registry/pods/ns1/a":          {ClassOrphanedNamespace},
			"/registry/pods/ns1/b":          {ClassOrphanedNamespace},
			"/registry/configmaps/ns1/junk": {ClassUndecodable, ClassOrphanedNamespace},
		}},
		{name: "ns10 only", namespace: "ns10", pageSize: 2, want: map[string][]Class{
			"/registry/pods/ns10/wrong": {ClassKeyMismatch},
		}},
		{name: "everything, small pages", pageSize: 1, want: map[string][]Class{
			"/registry/pods/ns1/a":            {ClassOrphanedNamespace},
			"/registry/pods/ns1/b":            {ClassOrphanedNamespace},
			"/registry/configmaps/ns1/junk":   {ClassUndecodable, ClassOrphanedNamespace},
			"/registry/pods/ns10/wrong":       {ClassKeyMismatch},
			"/registry/example.com/things/x1": {ClassUnservedType},
		}},
	}
	for _, tt := range tests {
		for _, paged := range []bool{false, true} {
			name := tt.name + ", streamed"
			if paged {
				name = tt.name + ", paged"
			}
			t.Run(name, func(t *testing.T) {
				store, err := NewEtcdStore(ctx, cli, tt.pageSize)
				if err != nil {
					t.Fatal(err)
				}
				if paged {
					store.DisableStreaming()
				}
				rep, err := Scan(ctx, store, Options{Namespace: tt.namespace, Now: func() time.Time { return time.Unix(2e9, 0) }})
				if err != nil {
					t.Fatal(err)
				}
				got := map[string][]Class{}
				for _, f := range rep.Findings {
					got[f.Key] = f.Classes
				}
				if len(got) != len(tt.want) {
					t.Errorf("got %d findings %v, want %d", len(got), got, len(tt.want))
				}
				for k, want := range tt.want {
					if g := got[k]; len(g) != len(want) || (len(g) > 0 && g[0] != want[0]) {
						t.Errorf("%s: got %v, want %v", k, g, want)
					}
				}
				if tt.namespace == "" && rep.InternalKeys != 1 {
					t.Errorf("internal keys = %d, want 1", rep.InternalKeys)
				}
			})
		}
	}
}

func TestScanRejectsBadOptions(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	store, err := NewEtcdStore(context.Background(), cli, 10)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Scan(context.Background(), store, Options{Prefix: "/registry"}); err == nil {
		t.Error("prefix without trailing slash accepted")
	}
	if _, err := Scan(context.Background(), store, Options{Served: catalog.Release()}); err == nil {
		t.Error("discovery without an API server accepted")
	}
}

// TestScanPartialKeyspace: a keyspace without the default namespace (an
// --etcd-servers-overrides etcd holding only events, say) must not call its
// objects orphaned, and must say the check was not made.
func TestScanPartialKeyspace(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	ctx := context.Background()
	for k, v := range map[string]string{
		"/registry/events/app/e1": encode(t, &corev1.Event{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Event"}, ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "e1"}}),
		"/registry/pods/app/p1":   encode(t, pod("app", "p1")),
	} {
		if _, err := cli.Put(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	store, err := NewEtcdStore(ctx, cli, 10)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Scan(ctx, store, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 0 {
		t.Errorf("findings in a partial keyspace: %+v", rep.Findings)
	}
	for _, c := range rep.Checks {
		if c.Name == "namespaces" && (c.Done || !strings.Contains(c.Note, "2 namespaced keys were not judged")) {
			t.Errorf("namespaces check: %+v", c)
		}
	}
}

// TestScanOfflineVerdictsAreSingleWitness: without the API server every
// ghost rests on etcd alone, and a resource compiled into kube-apiserver
// but off by default is not a ghost.
func TestScanOfflineVerdictsAreSingleWitness(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	ctx := context.Background()
	puts := map[string]string{
		"/registry/namespaces/default":    encode(t, namespace("default")),
		"/registry/pods/gone/p1":          encode(t, pod("gone", "p1")),
		"/registry/podsecuritypolicy/old": `{"apiVersion":"policy/v1beta1","kind":"PodSecurityPolicy","metadata":{"name":"old"}}`,
	}
	for k, v := range puts {
		if _, err := cli.Put(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	store, err := NewEtcdStore(ctx, cli, 10)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Scan(ctx, store, Options{APIUnavailable: "--no-api given"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Class{"/registry/pods/gone/p1": ClassOrphanedNamespace, "/registry/podsecuritypolicy/old": ClassUnservedType}
	if len(rep.Findings) != len(want) {
		t.Errorf("findings %+v", rep.Findings)
	}
	for _, f := range rep.Findings {
		if want[f.Key] != f.Classes[0] || !f.Ghost || !f.SingleWitness {
			t.Errorf("%s: classes %v ghost %v single %v", f.Key, f.Classes, f.Ghost, f.SingleWitness)
		}
	}
	for _, c := range rep.Checks {
		if c.Name == "api server witness" && c.Done {
			t.Errorf("report says the API server witness was asked: %+v", c)
		}
	}
}

// plantEmbedded writes namespace ns1's objects without their namespace key,
// ns10 with a mis-keyed pod, an undecodable value and a custom resource
// whose CRD is gone.
func plantEmbedded(t *testing.T, cli *clientv3.Client) {
	t.Helper()
	ctx := context.Background()
	puts := map[string]string{
		"/registry/namespaces/default":    encode(t, namespace("default")),
		"/registry/namespaces/ns10":       encode(t, namespace("ns10")),
		"/registry/pods/ns1/a":            encode(t, pod("ns1", "a")),
		"/registry/pods/ns1/b":            encode(t, pod("ns1", "b")),
		"/registry/pods/ns10/c":           encode(t, pod("ns10", "c")),
		"/registry/pods/ns10/wrong":       encode(t, pod("ns10", "other")),
		"/registry/configmaps/ns1/junk":   "\x00\x01garbage",
		"/registry/ranges/serviceips":     "internal",
		"/registry/example.com/things/x1": `{"apiVersion":"example.com/v1","kind":"Thing","metadata":{"name":"x1"}}`,
	}
	// Namespaces first: an object stored before its namespace is resurrected.
	keys := make([]string, 0, len(puts))
	for k := range puts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return strings.HasPrefix(keys[i], "/registry/namespaces/") && !strings.HasPrefix(keys[j], "/registry/namespaces/")
	})
	for _, k := range keys {
		if _, err := cli.Put(ctx, k, puts[k]); err != nil {
			t.Fatal(err)
		}
	}
}
