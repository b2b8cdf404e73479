package etcdscan

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/regghost/regghost/internal/etcdtest"
)

// TestScanSpilled: a scan whose findings move to a spill file, from the
// first one on or part way, reports exactly what one that keeps them in
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
