package etcdscan

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/regghost/regghost/internal/etcdtest"
)

// TestScanSpilled: a scan whose findings move to a spill file, at the
// second one or half way, reports exactly what one that keeps them in
// memory reports, in the same order, and leaves no file behind.
func TestScanSpilled(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	ctx := context.Background()
	plantResurrected(t, cli)
	plantEmbedded(t, cli)
	deleted := metav1.NewTime(time.Unix(1.9e9, 0))
	stuck := pod("app", "stuck")
	stuck.DeletionTimestamp, stuck.Finalizers = &deleted, []string{"example.com/never"}
	orphan := pod("app", "orphan")
	orphan.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "gone", UID: "9d000000-0000-4000-8000-000000000001"}}
	gone := namespace("leaving")
	gone.DeletionTimestamp, gone.Spec.Finalizers = &deleted, []corev1.FinalizerName{corev1.FinalizerKubernetes}
	for key, obj := range map[string]runtime.Object{
		"/registry/pods/app/stuck":     stuck,
		"/registry/pods/app/orphan":    orphan,
		"/registry/namespaces/leaving": gone,
		"/registry/pods/leaving/left":  pod("leaving", "left"),
	} {
		if _, err := cli.Put(ctx, key, encode(t, obj)); err != nil {
			t.Fatal(err)
		}
	}
	scan := func(t *testing.T, ns string, spillAfter int, dir string) (string, *Report) {
		store, err := NewEtcdStore(ctx, cli, 3)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := Scan(ctx, store, Options{Namespace: ns, SpillAfter: spillAfter, SpillDir: dir, Now: func() time.Time { return time.Unix(2e9, 0) }})
		if err != nil {
			t.Fatal(err)
		}
		raw, err := json.MarshalIndent(rep, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		return string(raw), rep
	}
	for _, ns := range []string{"", "app"} {
		want, inMemory := scan(t, ns, 0, "")
		if inMemory.Spilled() || inMemory.Len() < 6 {
			t.Fatalf("namespace %q: the scan in memory has %d findings (spilled %v)", ns, inMemory.Len(), inMemory.Spilled())
		}
		for _, after := range []int{1, inMemory.Len() / 2} {
			dir := t.TempDir()
			got, rep := scan(t, ns, after, dir)
			if !rep.Spilled() || rep.Len() != inMemory.Len() {
				t.Fatalf("namespace %q, spill after %d: spilled %v with %d findings, want %d spilled", ns, after, rep.Spilled(), rep.Len(), inMemory.Len())
			}
			if got != want {
				t.Errorf("namespace %q, spill after %d: report differs\n got %s\nwant %s", ns, after, got, want)
			}
			if rep.Ghosts() != inMemory.Ghosts() {
				t.Errorf("namespace %q: %d ghosts spilled, %d in memory", ns, rep.Ghosts(), inMemory.Ghosts())
			}
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Errorf("spill file left in %s: %v", dir, left)
			}
			if err := rep.Close(); err != nil {
				t.Fatal(err)
			}
			// Closed, it still counts, and refuses to be read.
			if rep.Len() != inMemory.Len() || rep.Ghosts() != inMemory.Ghosts() {
				t.Errorf("closed: %d findings, %d ghosts; want %d, %d", rep.Len(), rep.Ghosts(), inMemory.Len(), inMemory.Ghosts())
			}
			if err := rep.Each(func(*Finding) error { return nil }); err == nil {
				t.Error("Each of a closed report succeeds")
			}
			if _, err := json.Marshal(rep); err == nil {
				t.Error("a closed spilled report marshals")
			}
		}
	}
}

// TestScanSpillRefused: a scan that cannot spill its findings fails whole
// and says where, rather than keep them all in memory or report part.
func TestScanSpillRefused(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	plantEmbedded(t, cli)
	ctx := context.Background()
	store, err := NewEtcdStore(ctx, cli, 10)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "missing")
	rep, err := Scan(ctx, store, Options{SpillAfter: 1, SpillDir: dir})
	if err == nil || rep != nil || !strings.Contains(err.Error(), "more than 1 findings: spill to "+dir) {
		t.Fatalf("Scan = %v, %v; want an error naming %s", rep, err, dir)
	}
}

// TestFindingStoreOutOfOrder: findings recorded in any order after the
// spill (a namespace scan visits the namespace key first; owners and
// probes come after the walk), and keys longer than bbolt takes, are each
// found again, counted once and listed in key order.
func TestFindingStoreOutOfOrder(t *testing.T) {
	long := "/registry/configmaps/ns/" + strings.Repeat("x", 40000)
	keys := []string{"/registry/pods/ns/m", "/registry/namespaces/ns", "/registry/pods/ns/z", long, "/registry/configmaps/ns/a", "/registry/pods/ns/b"}
	st := newFindingStore(2, t.TempDir())
	defer st.close()
	for i, k := range keys {
		f := Finding{Key: k, Classes: []Class{ClassOrphanedNamespace}, Reasons: []string{fmt.Sprint("first ", i)}}
		if err := st.put(&f); err != nil {
			t.Fatal(err)
		}
	}
	if !st.spilled() {
		t.Fatal("6 findings past a limit of 2 are not spilled")
	}
	for i, k := range keys {
		f, err := st.get(k)
		if err != nil || f == nil || f.Reasons[0] != fmt.Sprint("first ", i) {
			t.Fatalf("get %.40s: %+v, %v", k, f, err)
		}
		f.Reasons[0] = fmt.Sprint("second ", i)
		if err := st.put(f); err != nil {
			t.Fatal(err)
		}
	}
	if st.n != len(keys) {
		t.Fatalf("%d findings counted, want %d", st.n, len(keys))
	}
	if f, err := st.get("/registry/pods/ns/c"); err != nil || f != nil {
		t.Fatalf("get of a key never put: %+v, %v", f, err)
	}
	if err := st.settle(func(f *Finding) { f.Ghost = f.Key != long }); err != nil {
		t.Fatal(err)
	}
	var got []string
	err := st.read(func(f *Finding) error {
		got = append(got, f.Key[:min(len(f.Key), 30)]+" "+f.Reasons[0])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/registry/configmaps/ns/a second 4", "/registry/namespaces/ns second 1", "/registry/pods/ns/b second 5",
		"/registry/pods/ns/m second 0", "/registry/pods/ns/z second 2", "/registry/configmaps/ns/xxxxxx second 3"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("settled order:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if err := st.put(&Finding{Key: "/registry/pods/ns/late"}); err != errSettled {
		t.Fatalf("put after settle: %v, want errSettled", err)
	}
}

// panicStore panics on the reads made after the walk (owners, namespaces).
type panicStore struct{ Store }

func (p panicStore) Get(ctx context.Context, key string) (*mvccpb.KeyValue, error) {
	if strings.HasPrefix(key, "/registry/replicasets/") {
		panic("a bug reading " + key)
	}
	return p.Store.Get(ctx, key)
}

// TestScanPanicClosesSpill: a scan that panics after spilling (serve
// recovers and scans again) closes its spill file.
func TestScanPanicClosesSpill(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	plantResurrected(t, cli)
	plantEmbedded(t, cli)
	orphan := pod("app", "orphan")
	orphan.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "gone", UID: "9d000000-0000-4000-8000-000000000001"}}
	ctx := context.Background()
	if _, err := cli.Put(ctx, "/registry/pods/app/orphan", encode(t, orphan)); err != nil {
		t.Fatal(err)
	}
	fds := func() int {
		d, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skip("no /proc/self/fd:", err)
		}
		return len(d)
	}
	store, err := NewEtcdStore(ctx, cli, 10)
	if err != nil {
		t.Fatal(err)
	}
	before := fds()
	func() {
		defer func() {
			if r := recover(); r == nil {
				t.Fatal("the scan did not panic")
			}
		}()
		_, _ = Scan(ctx, panicStore{store}, Options{SpillAfter: 1, SpillDir: t.TempDir()})
	}()
	if after := fds(); after != before {
		t.Fatalf("%d files open before the scan, %d after its panic: the spill file leaked", before, after)
	}
}
