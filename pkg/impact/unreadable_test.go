package impact

import (
	"bytes"
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/etcdscan"
)

// encPrefix marks a value "encrypted" for prefixDecrypter; the real
// transformers are tested in pkg/decrypt and against kube-apiserver in e2e.
const encPrefix = "k8s:enc:aescbc:v1:k1:"

// prefixDecrypter decrypts by stripping encPrefix.
type prefixDecrypter struct{}

func (prefixDecrypter) Decrypt(_ context.Context, _ string, _ schema.GroupResource, data []byte) ([]byte, error) {
	if !bytes.HasPrefix(data, []byte(encPrefix)) {
		return nil, errors.New("not encrypted with k1")
	}
	return data[len(encPrefix):], nil
}

// TestDecisionsReadWhatTheyNeed checks the rule: a decision that needs an
// object's content reads it (decrypting it), or is unknown and refused;
// never skipped.
func TestDecisionsReadWhatTheyNeed(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	ctx := context.Background()
	put := func(k, v string) {
		if _, err := cli.Put(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	claim := pvc("ns", "data", "u-data")
	claim.Spec.VolumeName = "pv-data"
	put("/registry/persistentvolumeclaims/ns/data", encode(t, claim))
	put("/registry/persistentvolumes/pv-data", encPrefix+encode(t, pv("pv-data", corev1.PersistentVolumeReclaimDelete, "ns", "data", "u-data")))
	// A claim with no volume name yet, and one PV nobody can read: the
	// binding cannot be ruled out.
	put("/registry/persistentvolumeclaims/ns/pending", encode(t, pvc("ns", "pending", "u-pending")))
	put("/registry/persistentvolumes/pv-dark", "k8s:enc:kms:v2:gone:xxxx")

	// An undecodable custom resource owns a ConfigMap; its kind comes from
	// the CRD key.
	put("/registry/apiextensions.k8s.io/customresourcedefinitions/widgets.example.com",
		`{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.example.com"},"spec":{"group":"example.com","names":{"plural":"widgets","kind":"Widget"},"scope":"Namespaced","versions":[{"name":"v1","served":true,"storage":true}]}}`)
	put("/registry/example.com/widgets/ns/w1", "{not json")
	owned := cm("ns", "owned")
	owned.OwnerReferences = []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Widget", Name: "w1", UID: "u-w1"}}
	put("/registry/configmaps/ns/owned", encode(t, owned))

	// The same when the CRD cannot be read either: any kind of the group
	// with that name is taken for it.
	put("/registry/apiextensions.k8s.io/customresourcedefinitions/gadgets.example.com", "{broken")
	put("/registry/example.com/gadgets/ns/g1", "{not json")
	owned2 := cm("ns", "owned2")
	owned2.OwnerReferences = []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Gadget", Name: "g1", UID: "u-g1"}}
	put("/registry/configmaps/ns/owned2", encode(t, owned2))

	// Controllers outside kube-controller-manager.
	svc := &corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}, ObjectMeta: meta("ns", "lb", "u-lb")}
	svc.Finalizers = []string{"service.kubernetes.io/load-balancer-cleanup"}
	put("/registry/services/specs/ns/lb", encode(t, svc))
	put("/registry/snapshot.storage.k8s.io/volumesnapshots/ns/snap",
		`{"apiVersion":"snapshot.storage.k8s.io/v1","kind":"VolumeSnapshot","metadata":{"name":"snap","namespace":"ns","uid":"u-snap"},"status":{"boundVolumeSnapshotContentName":"content-1"}}`)
	put("/registry/snapshot.storage.k8s.io/volumesnapshotcontents/content-1",
		`{"apiVersion":"snapshot.storage.k8s.io/v1","kind":"VolumeSnapshotContent","metadata":{"name":"content-1","uid":"u-c1"},"spec":{"deletionPolicy":"Delete"}}`)
	put("/registry/snapshot.storage.k8s.io/volumesnapshots/ns/kept",
		`{"apiVersion":"snapshot.storage.k8s.io/v1","kind":"VolumeSnapshot","metadata":{"name":"kept","namespace":"ns","uid":"u-kept"},"status":{"boundVolumeSnapshotContentName":"content-2"}}`)
	put("/registry/snapshot.storage.k8s.io/volumesnapshotcontents/content-2",
		`{"apiVersion":"snapshot.storage.k8s.io/v1","kind":"VolumeSnapshotContent","metadata":{"name":"content-2","uid":"u-c2"},"spec":{"deletionPolicy":"Retain"}}`)

	store, err := etcdscan.NewEtcdStore(ctx, cli, 100)
	if err != nil {
		t.Fatal(err)
	}
	target := func(k string, classes ...etcdscan.Class) etcdscan.Finding {
		key, _ := etcdscan.ParseKey("/registry/", k)
		return etcdscan.Finding{Key: k, Namespace: key.Namespace, Name: key.Name, Classes: classes}
	}
	targets := []etcdscan.Finding{target("/registry/persistentvolumeclaims/ns/data"), target("/registry/persistentvolumeclaims/ns/pending"),
		target("/registry/example.com/widgets/ns/w1", etcdscan.ClassUndecodable), target("/registry/example.com/gadgets/ns/g1", etcdscan.ClassUndecodable), target("/registry/services/specs/ns/lb"),
		target("/registry/snapshot.storage.k8s.io/volumesnapshots/ns/snap"), target("/registry/snapshot.storage.k8s.io/volumesnapshots/ns/kept")}
	tests := []struct {
		name    string
		readers Readers
		want    map[string][]Kind
	}{
		{"with the encryption config", Readers{Decrypter: prefixDecrypter{}}, map[string][]Kind{
			"/registry/persistentvolumeclaims/ns/data":    {StorageDestroyed},
			"/registry/persistentvolumeclaims/ns/pending": {Unknown},
			"/registry/example.com/widgets/ns/w1":         {DependentsDeleted},
			"/registry/example.com/gadgets/ns/g1":         {DependentsDeleted},
			"/registry/services/specs/ns/lb":              {FinalizersSkipped, LoadBalancerDeleted},
			// A custom resource also gets the operator note.
			"/registry/snapshot.storage.k8s.io/volumesnapshots/ns/snap": {SnapshotDestroyed, OperatorMayAct},
			"/registry/snapshot.storage.k8s.io/volumesnapshots/ns/kept": {OperatorMayAct},
		}},
		{"without it: the encrypted volume is unknown, never nothing", Readers{}, map[string][]Kind{
			"/registry/persistentvolumeclaims/ns/data":    {Unknown},
			"/registry/persistentvolumeclaims/ns/pending": {Unknown},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := Analyze(ctx, store, "/registry/", targets, tt.readers)
			if err != nil {
				t.Fatal(err)
			}
			for key, kinds := range tt.want {
				got := rep.Effects[key]
				var gotKinds []Kind
				for _, e := range got {
					gotKinds = append(gotKinds, e.Kind)
				}
				if len(gotKinds) != len(kinds) {
					t.Errorf("%s: effects %+v, want %v", key, got, kinds)
					continue
				}
				for i := range kinds {
					if gotKinds[i] != kinds[i] {
						t.Errorf("%s: effects %v, want %v", key, gotKinds, kinds)
					}
				}
				for _, e := range got {
					if e.Kind != OperatorMayAct && e.Kind != FinalizersSkipped && !e.Irreversible {
						t.Errorf("%s: %s not irreversible", key, e.Kind)
					}
				}
			}
			if refused := rep.Refused(Options{}); len(refused) == 0 {
				t.Error("nothing refused")
			}
		})
	}
}

func TestStripEffect(t *testing.T) {
	tests := []struct {
		finalizer string
		kind      Kind
		ok        bool
	}{
		{"service.kubernetes.io/load-balancer-cleanup", LoadBalancerLeaked, true},
		{"group.ingress.k8s.aws/shared", LoadBalancerLeaked, true},
		{"external-attacher/ebs-csi-aws-com", VolumeLeftAttached, true},
		{"snapshot.storage.kubernetes.io/volumesnapshotcontent-bound-protection", SnapshotLeaked, true},
		{"resource.kubernetes.io/delete-protection", DeviceAllocationLost, true},
		{"example.com/cleanup", "", false},
		{"kubernetes", "", false},
	}
	for _, tt := range tests {
		e, ok := StripEffect(tt.finalizer)
		if ok != tt.ok || e.Kind != tt.kind || (ok && !e.Irreversible) {
			t.Errorf("%s: %+v %v, want %s %v", tt.finalizer, e, ok, tt.kind, tt.ok)
		}
		if ok {
			if _, err := ParseKind(string(e.Kind)); err != nil {
				t.Errorf("%s: its kind cannot be accepted: %v", tt.finalizer, err)
			}
		}
	}
}
