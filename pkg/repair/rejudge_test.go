package repair

import (
	"context"
	"errors"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/impact"
)

// TestPurgeJudgesTheImpactAgainUnderTheLock: a claim whose volume was
// Retain when the plan was made, and is Delete by the time the purge
// writes, is not deleted: the impact is worked out again under the lock.
func TestPurgeJudgesTheImpactAgainUnderTheLock(t *testing.T) {
	cli, ep := etcdtest.Start(t)
	ctx := context.Background()
	const (
		claimKey = "/registry/persistentvolumeclaims/ns/data"
		pvKey    = "/registry/persistentvolumes/pv1"
	)
	pv := func(policy corev1.PersistentVolumeReclaimPolicy) string {
		return etcdtest.Encode(t, &corev1.PersistentVolume{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolume"},
			ObjectMeta: metav1.ObjectMeta{Name: "pv1", UID: "pv-uid"},
			Spec: corev1.PersistentVolumeSpec{PersistentVolumeReclaimPolicy: policy,
				ClaimRef: &corev1.ObjectReference{Namespace: "ns", Name: "data", UID: "claim-uid"}},
			Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound}})
	}
	etcdtest.Put(t, cli, pvKey, pv(corev1.PersistentVolumeReclaimRetain))
	claim := etcdtest.Put(t, cli, claimKey, etcdtest.Encode(t, &corev1.PersistentVolumeClaim{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data", UID: "claim-uid"},
		Spec:       corev1.PersistentVolumeClaimSpec{VolumeName: "pv1"}, Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}}))
	targets := []etcdscan.Finding{{Key: claimKey, Namespace: "ns", Ghost: true, ModRevision: claim.ModRevision,
		Classes: []etcdscan.Class{etcdscan.ClassOrphanedNamespace}, Reasons: []string{"no namespace"}}}
	store, err := etcdscan.NewEtcdStore(ctx, cli, etcdscan.DefaultPageSize)
	if err != nil {
		t.Fatal(err)
	}
	effects, err := impact.Analyze(ctx, store, "/registry/", targets, impact.Readers{})
	if err != nil {
		t.Fatal(err)
	}
	plan := &Plan{Scope: "namespace ns", Prefix: "/registry/", Revision: store.Revision(), Targets: targets, readers: &impact.Readers{}}
	plan.SetImpact(effects, impact.Options{})
	if err := plan.Refusal(); err != nil {
		t.Fatalf("the plan with a Retain volume is refused: %v", err)
	}
	// The operator reads the plan; someone switches the volume to Delete.
	etcdtest.Put(t, cli, pvKey, pv(corev1.PersistentVolumeReclaimDelete))
	root := t.TempDir()
	res, err := Purge(ctx, plan, PurgeOptions{BackupRoot: root, Client: cli, ClientConfig: clientv3.Config{Endpoints: []string{ep}},
		Pacing: etcdwrite.Pacing{PerSecond: 1000}})
	if !errors.Is(err, ErrChanged) || res != nil {
		t.Fatalf("purge: %+v, %v; want it stopped as changed since the plan", res, err)
	}
	if got, _ := cli.Get(ctx, claimKey); len(got.Kvs) != 1 {
		t.Error("the claim was deleted: its volume's storage goes with it")
	}
}
