package impact

import (
	"context"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/usage"
)

func encode(t *testing.T, obj runtime.Object) string { return etcdtest.Encode(t, obj) }

func meta(ns, name, uid string, owners ...string) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)}
	for _, o := range owners {
		m.OwnerReferences = append(m.OwnerReferences, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: o, UID: types.UID(o)})
	}
	return m
}

func pv(name string, policy corev1.PersistentVolumeReclaimPolicy, ns, claim, uid string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolume"}, ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{PersistentVolumeReclaimPolicy: policy,
			ClaimRef:               &corev1.ObjectReference{Namespace: ns, Name: claim, UID: types.UID(uid)},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/hostpath_pv/" + name}}}}
}

func pvc(ns, name, uid string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"}, ObjectMeta: meta(ns, name, uid)}
}

func cm(ns, name string, owners ...string) *corev1.ConfigMap {
	return &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: meta(ns, name, name, owners...)}
}

func TestAnalyze(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	ctx := context.Background()
	node := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: meta("ns", "p", "p"), Spec: corev1.PodSpec{NodeName: "n1"}}
	fin := cm("ns", "fin")
	fin.Finalizers = []string{"example.com/x"}
	puts := map[string]runtime.Object{
		"/registry/persistentvolumeclaims/ns/del":    pvc("ns", "del", "u-del"),
		"/registry/persistentvolumeclaims/ns/keep":   pvc("ns", "keep", "u-keep"),
		"/registry/persistentvolumeclaims/ns/reused": pvc("ns", "reused", "u-new"),
		"/registry/persistentvolumes/pv-del":         pv("pv-del", corev1.PersistentVolumeReclaimDelete, "ns", "del", "u-del"),
		"/registry/persistentvolumes/pv-keep":        pv("pv-keep", corev1.PersistentVolumeReclaimRetain, "ns", "keep", "u-keep"),
		// Bound to an earlier claim of the same name: not this claim's volume.
		"/registry/persistentvolumes/pv-old":  pv("pv-old", corev1.PersistentVolumeReclaimDelete, "ns", "reused", "u-old"),
		"/registry/pods/ns/p":                 node,
		"/registry/configmaps/ns/fin":         fin,
		"/registry/configmaps/ns/root":        cm("ns", "root"),
		"/registry/configmaps/ns/child":       cm("ns", "child", "root"),
		"/registry/configmaps/ns/grandchild":  cm("ns", "grandchild", "child"),
		"/registry/configmaps/ns/shared":      cm("ns", "shared", "root", "other"),
		"/registry/configmaps/ns/other":       cm("ns", "other"),
		"/registry/configmaps/ns2/elsewhere":  cm("ns2", "elsewhere", "root"),
		"/registry/configmaps/ns/purgedchild": cm("ns", "purgedchild", "root2"),
		"/registry/configmaps/ns/root2":       cm("ns", "root2"),
		// Its other owner is not there at all: the GC deletes it with root.
		"/registry/configmaps/ns/orphanco": cm("ns", "orphanco", "root", "never-existed"),
		// Owned by the undecodable target, known to it only by name.
		"/registry/configmaps/ns/brokenchild": cm("ns", "brokenchild", "broken"),
		"/registry/persistentvolumes/pv-dep":  pv("pv-dep", corev1.PersistentVolumeReclaimDelete, "ns", "depclaim", "u-dep"),
		"/registry/persistentvolumeclaims/ns/depclaim": &corev1.PersistentVolumeClaim{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
			ObjectMeta: meta("ns", "depclaim", "u-dep", "root")},
	}
	for k, o := range puts {
		if _, err := cli.Put(ctx, k, encode(t, o)); err != nil {
			t.Fatal(err)
		}
	}
	now, yes := metav1.Now(), true
	terminating := pvc("ns", "held", "u-held")
	terminating.DeletionTimestamp = &now
	sa := &corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}, ObjectMeta: meta("ns", "builder", "u-sa")}
	token := &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: meta("ns", "builder-token", "u-token"), Type: corev1.SecretTypeServiceAccountToken}
	token.Annotations = map[string]string{corev1.ServiceAccountNameKey: "builder", corev1.ServiceAccountUIDKey: "u-sa"}
	user := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: meta("ns", "user", "u-user"),
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "held"}}}}}}
	for k, o := range map[string]runtime.Object{
		"/registry/persistentvolumeclaims/ns/held": terminating,
		"/registry/persistentvolumes/pv-held":      pv("pv-held", corev1.PersistentVolumeReclaimDelete, "ns", "held", "u-held"),
		"/registry/serviceaccounts/ns/builder":     sa,
		"/registry/secrets/ns/builder-token":       token,
		"/registry/pods/ns/user":                   user,
		"/registry/replicasets/ns/rs-live":         &appsv1.ReplicaSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"}, ObjectMeta: meta("ns", "rs-live", "u-rs")},
		"/registry/pods/ns/managed": &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "managed", UID: "u-managed",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs-live", UID: "u-rs", Controller: &yes}}}},
	} {
		if _, err := cli.Put(ctx, k, encode(t, o)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cli.Put(ctx, "/registry/configmaps/ns/broken", "\x00garbage"); err != nil {
		t.Fatal(err)
	}
	store, err := etcdscan.NewEtcdStore(ctx, cli, 100)
	if err != nil {
		t.Fatal(err)
	}
	var targets []etcdscan.Finding
	for _, k := range []string{"/registry/persistentvolumeclaims/ns/del", "/registry/persistentvolumeclaims/ns/keep", "/registry/persistentvolumeclaims/ns/reused",
		"/registry/pods/ns/p", "/registry/configmaps/ns/fin", "/registry/serviceaccounts/ns/builder", "/registry/pods/ns/user", "/registry/pods/ns/managed", "/registry/configmaps/ns/root", "/registry/configmaps/ns/root2", "/registry/configmaps/ns/purgedchild"} {
		key, _ := etcdscan.ParseKey("/registry/", k)
		targets = append(targets, etcdscan.Finding{Key: k, Namespace: key.Namespace, Name: key.Name})
	}
	targets = append(targets, etcdscan.Finding{Key: "/registry/configmaps/ns/broken", Namespace: "ns", Name: "broken", Classes: []etcdscan.Class{etcdscan.ClassUndecodable}})
	rep, err := Analyze(ctx, store, "/registry/", targets, Readers{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		key          string
		kinds        []Kind
		irreversible bool
		objects      []string
	}{
		{"/registry/persistentvolumeclaims/ns/del", []Kind{StorageDestroyed}, true, []string{"/registry/persistentvolumes/pv-del"}},
		{"/registry/persistentvolumeclaims/ns/keep", []Kind{VolumeReleased}, false, []string{"/registry/persistentvolumes/pv-keep"}},
		{"/registry/persistentvolumeclaims/ns/reused", nil, false, nil},
		{"/registry/pods/ns/p", []Kind{ContainersStopped}, false, nil},
		{"/registry/configmaps/ns/fin", []Kind{FinalizersSkipped}, false, []string{"example.com/x"}},
		// Only namespaced dependents in the owner's namespace count; shared
		// keeps a live owner; grandchild goes with child.
		// A dependent claim destroys its volume's storage too.
		{"/registry/configmaps/ns/root", []Kind{StorageDestroyed, DependentsDeleted}, true, nil},
		{"/registry/configmaps/ns/root2", []Kind{DependentsPurged}, false, []string{"/registry/configmaps/ns/purgedchild"}},
		{"/registry/configmaps/ns/broken", []Kind{DependentsDeleted}, true, []string{"/registry/configmaps/ns/brokenchild"}},
		// The token controller deletes a ServiceAccount's legacy token Secrets.
		{"/registry/serviceaccounts/ns/builder", []Kind{ControllerActs, DependentsDeleted}, false, nil},
		// A pod holding a Terminating claim lets it go, and its volume with it.
		{"/registry/pods/ns/user", []Kind{ControllerActs, StorageDestroyed}, false, nil},
		// A live ReplicaSet replaces its pod.
		{"/registry/pods/ns/managed", []Kind{ControllerActs}, false, []string{"/registry/replicasets/ns/rs-live"}},
	}
	for _, tt := range tests {
		got := rep.Effects[tt.key]
		if len(got) != len(tt.kinds) {
			t.Errorf("%s: effects %+v, want kinds %v", tt.key, got, tt.kinds)
			continue
		}
		for i, e := range got {
			irreversible := tt.irreversible || e.Kind == StorageDestroyed || e.Kind == DependentsDeleted
			if e.Kind != tt.kinds[i] || e.Irreversible != irreversible || (tt.objects != nil && !equal(e.Objects, tt.objects)) {
				t.Errorf("%s: effect %+v, want %s irreversible=%v objects %v", tt.key, e, tt.kinds[i], tt.irreversible, tt.objects)
			}
		}
	}
	if e := rep.Effects["/registry/configmaps/ns/root"]; len(e) == 2 && !equal(e[1].Objects, []string{"/registry/configmaps/ns/child",
		"/registry/configmaps/ns/grandchild", "/registry/configmaps/ns/orphanco", "/registry/persistentvolumeclaims/ns/depclaim"}) {
		t.Errorf("dependents of root: %v", e[1].Objects)
	}
	if v := rep.VolumesToRetain(); len(v) != 3 || v[0].Name != "pv-del" || v[1].Name != "pv-dep" || v[2].Name != "pv-held" {
		t.Errorf("volumes to retain: %+v", v)
	}
	refused := rep.Refused(Options{})
	if len(refused) != 5 {
		t.Errorf("refused without options: %v", refused)
	}
	if refused := rep.Refused(Options{RetainVolumes: true, Accept: []Kind{DependentsDeleted}}); len(refused) != 0 {
		t.Errorf("refused with --retain-volumes and --accept-impact dependents-deleted: %v", refused)
	}
}

func TestParseKind(t *testing.T) {
	for _, s := range []string{"load-balancer-deleted", "dependents-deleted", "pods-on-node-deleted", "unknown"} {
		if _, err := ParseKind(s); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	for _, s := range []string{"storage-destroyed", "containers-stopped", "", "bogus"} {
		if _, err := ParseKind(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}

// TestParseKinds: the words of purge's and unstick's --accept-impact, each
// read as its command takes it; a word that names no kind is a usage
// error (exit 2) naming the flag.
func TestParseKinds(t *testing.T) {
	strip := StripAcceptable()
	for _, tc := range []struct {
		name  string
		parse func([]string) ([]Kind, error)
		words []string
		want  []Kind
		bad   bool
	}{
		{"none", ParseKinds, nil, nil, false},
		{"two", ParseKinds, []string{"load-balancer-deleted", "unknown"}, []Kind{LoadBalancerDeleted, Unknown}, false},
		{"one unknown word", ParseKinds, []string{"load-balancer-deleted", "bogus"}, nil, true},
		{"unstick's kind", ParseStripKinds, []string{string(strip[0])}, strip[:1], false},
		{"purge's kind to unstick", ParseStripKinds, []string{"pods-on-node-deleted"}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.parse(tc.words)
			if tc.bad {
				if !usage.Is(err) || !strings.HasPrefix(err.Error(), AcceptImpactFlag+": ") {
					t.Fatalf("got %v, %v; want a usage error naming %s", got, err, AcceptImpactFlag)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
