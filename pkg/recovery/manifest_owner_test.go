package recovery

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	apitypes "k8s.io/apimachinery/pkg/types"
)

// TestManifestsLeaveOutADependentOfAPrintedOwner: kubectl apply gives a
// printed owner a new UID, so a dependent printed beside it would point at
// the old one and the garbage collector would delete it: it is left out
// with the reason, whatever the key order (pods before replicasets). A
// dependent whose owner is not printed (it exists live) is printed.
func TestManifestsLeaveOutADependentOfAPrintedOwner(t *testing.T) {
	owned := func(uid string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: apitypes.UID("rs-" + uid)}}
	}
	obj := func(key string, o runtime.Object) *Object {
		return &Object{Key: key, Obj: o, Verdict: Verdict{Action: Recover}}
	}
	rs := &appsv1.ReplicaSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"}, ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "rs-1"}}
	pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-a", UID: "p-1", OwnerReferences: owned("1")}}
	other := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "live-b", UID: "p-2", OwnerReferences: owned("live")}}
	objs := []*Object{obj("/registry/pods/shop/live-b", other), obj("/registry/pods/shop/web-a", pod), obj("/registry/replicasets/shop/web", rs)}
	list, left, err := Manifests(objs, ManifestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, u := range list.Items {
		names = append(names, u.GetName())
	}
	if strings.Join(names, ",") != "live-b,web" {
		t.Errorf("printed %v, want live-b and the ReplicaSet", names)
	}
	if len(left) != 1 || left[0].Key != "/registry/pods/shop/web-a" || !strings.Contains(left[0].Reason, "garbage collector") {
		t.Errorf("left out %+v, want the pod whose owner is printed, with why", left)
	}
}
