package etcdscan

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/internal/etcdtest"
)

// TestResurrected: objects stored before their namespace's key (an earlier
// namespace of that name) are resurrected, and so is what a resurrected
// owner created since; objects created in the new namespace are not.
func TestResurrected(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	ctx := context.Background()
	plantResurrected(t, cli)
	for _, ns := range []string{"", "app"} {
		store, err := NewEtcdStore(ctx, cli, 10)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := Scan(ctx, store, Options{Namespace: ns})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, f := range rep.Findings {
			if f.Has(ClassResurrected) && !f.Ghost {
				got[f.Key] = true
			} else {
				t.Errorf("namespace %q: unexpected finding %s %v", ns, f.Key, f.Classes)
			}
		}
		for _, k := range []string{"/registry/replicasets/app/web", "/registry/pods/app/web-old", "/registry/configmaps/app/old", "/registry/pods/app/web-new", "/registry/secrets/app/sealed"} {
			if !got[k] {
				t.Errorf("namespace %q: %s is not reported resurrected", ns, k)
			}
		}
		if len(got) != 5 {
			t.Errorf("namespace %q: resurrected %v", ns, got)
		}
	}
}

// plantResurrected writes namespace app, created again after its objects,
// and namespace copy, a key-by-key copy whose creation times are in order.
func plantResurrected(t *testing.T, cli *clientv3.Client) {
	t.Helper()
	ctx := context.Background()
	yes := true
	rs := &appsv1.ReplicaSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"}, ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "web", UID: "8c1c1f9e-0b7e-4c1a-9a3e-1d3e0f6b2a01"}}
	owned := func(name, uid string) *corev1.Pod {
		p := pod("app", name)
		p.UID = types.UID("00000000-0000-4000-8000-" + uid)
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: rs.UID, Controller: &yes}}
		return p
	}
	// A keyspace copied key by key (etcdctl make-mirror) stores objects
	// before their namespace, but their creation times say otherwise.
	mirroredNS := namespace("copy")
	mirroredNS.CreationTimestamp = metav1.NewTime(time.Unix(1.7e9, 0))
	mirrored := pod("copy", "p")
	mirrored.CreationTimestamp = metav1.NewTime(time.Unix(1.7e9+3600, 0))
	at := func(o metav1.Object, sec int64) runtime.Object {
		o.SetCreationTimestamp(metav1.NewTime(time.Unix(1.8e9+sec, 0)))
		return o.(runtime.Object)
	}
	steps := []struct {
		key string
		obj runtime.Object
	}{
		{"/registry/namespaces/default", namespace("default")},
		{"/registry/pods/copy/p", mirrored},
		{"/registry/namespaces/copy", mirroredNS},
		{"/registry/replicasets/app/web", at(rs, 0)},
		{"/registry/pods/app/web-old", at(owned("web-old", "000000000001"), 1)},
		{"/registry/configmaps/app/old", at(&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "old", UID: "u-old"}}, 2)},
		// Stored before the namespace too, but with no creation time: not judged.
		{"/registry/configmaps/app/timeless", &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "timeless", UID: "u-timeless"}}},
		// Encrypted with keys nobody here has: judged on the revisions,
		// and the reason says the times could not be compared.
		{"/registry/secrets/app/sealed", nil},
		// The namespace is created again, after its objects.
		{"/registry/namespaces/app", at(namespace("app"), 60)},
		{"/registry/pods/app/web-new", at(owned("web-new", "000000000002"), 120)},
		{"/registry/pods/app/unrelated", at(pod("app", "unrelated"), 120)},
	}
	for _, s := range steps {
		value := "k8s:enc:kms:v2:gone:\x00sealed"
		if s.obj != nil {
			value = encode(t, s.obj)
		}
		if _, err := cli.Put(ctx, s.key, value); err != nil {
			t.Fatal(err)
		}
	}
}
