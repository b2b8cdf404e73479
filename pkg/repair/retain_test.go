package repair

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/impact"
)

// TestPurgeRetainsAVolumeOnlyRightBeforeItsClaimGoes: a volume is set to
// Retain right before the transaction that deletes its claim, and never
// when the claim is not deleted: changed since the backup, after a stop,
// or after an earlier transaction failed.
func TestPurgeRetainsAVolumeOnlyRightBeforeItsClaimGoes(t *testing.T) {
	const (
		first = "/registry/configmaps/ns/a"
		claim = "/registry/persistentvolumeclaims/ns/data"
		last  = "/registry/secrets/ns/z"
		pvKey = "/registry/persistentvolumes/pv1"
	)
	tests := []struct {
		name string
		// between runs after the backup, before the first delete.
		between func(t *testing.T, cli *clientv3.Client, stop chan struct{})
		// firstFails makes the first key's transaction fail (more
		// compares than etcd takes in one).
		firstFails bool
		// stopAfterFirst stops the purge once the first key is deleted.
		stopAfterFirst bool
		retained       bool
		claimOutcome   etcdwrite.Outcome
	}{
		{name: "claim deleted: its volume is set to Retain right before", retained: true, claimOutcome: etcdwrite.Deleted},
		{name: "claim changed since the backup", claimOutcome: etcdwrite.SkippedChanged,
			between: func(t *testing.T, cli *clientv3.Client, _ chan struct{}) {
				backup.EntryOf(etcdtest.Put(t, cli, claim, "claim, changed"))
			}},
		{name: "stopped before the deletes", claimOutcome: etcdwrite.NotAttempted,
			between: func(_ *testing.T, _ *clientv3.Client, stop chan struct{}) { close(stop) }},
		{name: "stopped after the first delete", stopAfterFirst: true, claimOutcome: etcdwrite.NotAttempted},
		{name: "an earlier transaction failed", firstFails: true, claimOutcome: etcdwrite.NotAttempted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cli, ep := etcdtest.Start(t)
			ctx := context.Background()
			var targets []etcdscan.Finding
			for _, k := range []string{first, claim, last} {
				e := backup.EntryOf(etcdtest.Put(t, cli, k, "v"))
				f := etcdscan.Finding{Key: k, Namespace: "ns", Ghost: true, ModRevision: e.ModRevision,
					Classes: []etcdscan.Class{etcdscan.ClassOrphanedNamespace}, Reasons: []string{"no namespace"}}
				if k == first && tt.firstFails {
					for i := 0; i < 130; i++ {
						f.Absent = append(f.Absent, fmt.Sprintf("/registry/namespaces/gone%d", i))
					}
				}
				targets = append(targets, f)
			}
			pv := backup.EntryOf(etcdtest.Put(t, cli, pvKey, "pv"))
			vol := &impact.Volume{Name: "pv1", Key: pvKey, ModRevision: pv.ModRevision, ReclaimPolicy: "Delete"}
			plan := &Plan{Scope: "namespace ns", Prefix: "/registry/", Revision: pv.ModRevision, Targets: targets}
			plan.SetImpact(&impact.Report{Effects: map[string][]impact.Effect{claim: {{Kind: impact.StorageDestroyed, Irreversible: true, Volume: vol}}}},
				impact.Options{RetainVolumes: true})

			kube := fake.NewClientset(&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv1"},
				Spec: corev1.PersistentVolumeSpec{PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete}})
			// What etcd held when the patch was sent.
			var mu sync.Mutex
			var atPatch map[string]bool
			kube.PrependReactor("patch", "persistentvolumes", func(k8stesting.Action) (bool, runtime.Object, error) {
				mu.Lock()
				defer mu.Unlock()
				atPatch = map[string]bool{}
				for _, k := range []string{first, claim, last} {
					resp, err := cli.Get(ctx, k, clientv3.WithCountOnly())
					atPatch[k] = err == nil && resp.Count > 0
				}
				return false, nil, nil
			})
			stop := make(chan struct{})
			if tt.stopAfterFirst {
				w := cli.Watch(ctx, first)
				go func() {
					for resp := range w {
						for _, ev := range resp.Events {
							if ev.Type == clientv3.EventTypeDelete {
								close(stop)
								return
							}
						}
					}
				}()
			}
			res, err := Purge(ctx, plan, PurgeOptions{BackupRoot: t.TempDir(), Client: cli, ClientConfig: clientv3.Config{Endpoints: []string{ep}}, Kube: kube,
				Pacing: etcdwrite.Pacing{BatchSize: 64, PerSecond: 4, Stop: stop},
				beforeWrite: func() {
					if tt.between != nil {
						tt.between(t, cli, stop)
					}
				}})
			if res == nil {
				t.Fatalf("purge: %v", err)
			}
			outcomes := map[string]etcdwrite.Result{}
			for _, r := range res.Results {
				outcomes[r.Key] = r
			}
			if got := outcomes[claim].Outcome; got != tt.claimOutcome {
				t.Errorf("claim: %s (%s), want %s; purge error %v", got, outcomes[claim].Detail, tt.claimOutcome, err)
			}
			got, gerr := kube.CoreV1().PersistentVolumes().Get(ctx, "pv1", metav1.GetOptions{})
			if gerr != nil {
				t.Fatal(gerr)
			}
			if retained := got.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimRetain; retained != tt.retained {
				t.Fatalf("PV reclaim policy %s; its result: %+v", got.Spec.PersistentVolumeReclaimPolicy, outcomes[pvKey])
			}
			if !tt.retained {
				if r := outcomes[pvKey]; r.Outcome != etcdwrite.NotRetained || !strings.Contains(r.Detail, claim+" was not deleted") {
					t.Errorf("PV result %+v", r)
				}
				return
			}
			// Right before the claim's transaction: the keys before it are
			// gone, the claim and the keys after it are still there.
			if atPatch[first] || !atPatch[claim] || !atPatch[last] {
				t.Errorf("etcd when the PV was patched: %v", atPatch)
			}
			var order []string
			for _, r := range res.Results {
				order = append(order, r.Key+" "+string(r.Outcome))
			}
			if want := []string{first + " deleted", pvKey + " retained", claim + " deleted", last + " deleted"}; strings.Join(order, ", ") != strings.Join(want, ", ") {
				t.Errorf("results %v, want %v", order, want)
			}
			if err != nil {
				t.Errorf("purge: %v", err)
			}
		})
	}
}

// TestRetainVolumeNeedsTheAPIServer: Retain is set through the API server
// or not at all, and a purge that needs it refuses before anything.
func TestRetainVolumeNeedsTheAPIServer(t *testing.T) {
	vol := impact.Volume{Name: "pv1", Key: "/registry/persistentvolumes/pv1", ReclaimPolicy: "Delete"}
	if _, err := RetainVolume(context.Background(), nil, vol); !errors.Is(err, errNoKube) {
		t.Errorf("RetainVolume without an API server: %v", err)
	}
	plan := &Plan{Scope: "namespace ns", Targets: []etcdscan.Finding{{Key: "/registry/persistentvolumeclaims/ns/data"}}}
	plan.SetImpact(&impact.Report{Effects: map[string][]impact.Effect{"/registry/persistentvolumeclaims/ns/data": {{Kind: impact.StorageDestroyed, Irreversible: true, Volume: &vol}}}},
		impact.Options{RetainVolumes: true})
	root := t.TempDir() + "/backups"
	if _, err := Purge(context.Background(), plan, PurgeOptions{BackupRoot: root, Now: func() time.Time { return time.Unix(0, 0) }}); !errors.Is(err, errNoKube) {
		t.Errorf("purge without an API server: %v", err)
	}
}
