package recovery

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/decode"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/objread"
	"github.com/regghost/regghost/pkg/resolve"
)

const reg = "/registry/"

func cm(ns, name, uid string, lbl map[string]string, owners ...metav1.OwnerReference) *corev1.ConfigMap {
	return &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid), Labels: lbl, OwnerReferences: owners}}
}

func nsObj(name, uid string) *corev1.Namespace {
	return &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid)}}
}

// world is a source (an older revision of the same etcd) and the live etcd.
type world struct {
	t    *testing.T
	src  *etcdscan.EtcdStore
	live *etcdscan.EtcdStore
	kv   etcdwrite.KVLease
}

// newWorld writes before, reads it as the source, then applies after
// (nil values delete) and reads the live keyspace.
func newWorld(t *testing.T, before map[string]runtime.Object, after map[string]runtime.Object) *world {
	return newRawWorld(t, before, after, nil, nil)
}

// newRawWorld is newWorld with raw values (JSON, as CRDs and custom
// resources are stored) besides the objects.
func newRawWorld(t *testing.T, before, after map[string]runtime.Object, rawBefore, rawAfter map[string]string) *world {
	t.Helper()
	cli, _ := etcdtest.Start(t)
	ctx := context.Background()
	for k, o := range before {
		if _, err := cli.Put(ctx, k, etcdtest.Encode(t, o)); err != nil {
			t.Fatal(err)
		}
	}
	for k, v := range rawBefore {
		if _, err := cli.Put(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := cli.Get(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	srcRev := resp.Header.Revision
	for k, o := range after {
		if o == nil {
			_, err = cli.Delete(ctx, k)
		} else {
			_, err = cli.Put(ctx, k, etcdtest.Encode(t, o))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for k, v := range rawAfter {
		if _, err := cli.Put(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	src, err := etcdscan.NewEtcdStoreAt(ctx, cli, 100, srcRev)
	if err != nil {
		t.Fatal(err)
	}
	live, err := etcdscan.NewEtcdStore(ctx, cli, 100)
	if err != nil {
		t.Fatal(err)
	}
	return &world{t: t, src: src, live: live, kv: cli}
}

func (w *world) judge(sel Selection, accept ...ImpactKind) map[string]*Object {
	return w.judgeWith(sel, Options{}, accept...)
}

func (w *world) judgeWith(sel Selection, o Options, accept ...ImpactKind) map[string]*Object {
	w.t.Helper()
	m := map[string]*Object{}
	for _, o := range w.judged(sel, o, accept...) {
		m[o.Key] = o
	}
	return m
}

// judged selects and judges, in Select's order.
func (w *world) judged(sel Selection, o Options, accept ...ImpactKind) []*Object {
	w.t.Helper()
	ctx := context.Background()
	sel.Registry = reg
	objs, err := Select(ctx, w.src, sel, nil)
	if err != nil {
		w.t.Fatal(err)
	}
	types, err := resolve.Load(ctx, w.live, reg, nil, nil)
	if err != nil {
		w.t.Fatal(err)
	}
	acc := map[ImpactKind]bool{}
	for _, a := range accept {
		acc[a] = true
	}
	o.Registry, o.Live, o.Reader, o.Types, o.Accept, o.Source = reg, w.live, &objread.Reader{Registry: reg}, types, acc, w.src
	if err := Judge(ctx, objs, o); err != nil {
		w.t.Fatal(err)
	}
	return objs
}

func TestJudge(t *testing.T) {
	owner := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "u-owner"}
	before := map[string]runtime.Object{
		reg + "namespaces/a":         nsObj("a", "u-a"),
		reg + "namespaces/gone":      nsObj("gone", "u-gone"),
		reg + "configmaps/a/deleted": cm("a", "deleted", "u1", map[string]string{"app": "web"}),
		reg + "configmaps/a/changed": cm("a", "changed", "u2", nil),
		reg + "configmaps/a/same":    cm("a", "same", "u3", nil),
		reg + "configmaps/a/moved":   cm("a", "moved", "u4", nil),
		reg + "configmaps/a/owner":   cm("a", "owner", "u-owner", nil),
		reg + "configmaps/a/orphan":  cm("a", "orphan", "u5", nil, owner),
		reg + "configmaps/gone/c":    cm("gone", "c", "u6", map[string]string{"app": "db"}),
		reg + "namespaces/re":        nsObj("re", "u-re-old"),
		reg + "configmaps/re/c":      cm("re", "c", "u8", nil),
		reg + "configmaps/a/liar":    cm("a", "other-name", "u9", nil),
		reg + "serviceaccounts/a/sa": &corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}, ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "sa", UID: "u10"}},
		reg + "services/specs/a/old": &corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}, ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "old", UID: "u11"},
			Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.7", ClusterIPs: []string{"10.0.0.7"}}},
		reg + "pods/a/p": &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "p", UID: "u7"},
			Spec: corev1.PodSpec{NodeName: "n1"}},
	}
	after := map[string]runtime.Object{
		reg + "namespaces/gone":         nil,
		reg + "configmaps/gone/c":       nil,
		reg + "configmaps/a/deleted":    nil,
		reg + "configmaps/a/changed":    cm("a", "changed", "u2", map[string]string{"new": "yes"}),
		reg + "configmaps/a/moved":      nil,
		reg + "configmaps/a/moved-here": cm("a", "moved-here", "u4", nil),
		reg + "configmaps/a/owner":      nil,
		reg + "configmaps/a/orphan":     nil,
		reg + "pods/a/p":                nil,
		reg + "namespaces/re":           nsObj("re", "u-re-new"),
		reg + "configmaps/re/c":         nil,
		reg + "configmaps/a/liar":       nil,
		reg + "serviceaccounts/a/sa":    nil,
		reg + "services/specs/a/old":    nil,
		reg + "services/specs/a/new": &corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}, ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "new", UID: "u12"},
			Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.7", ClusterIPs: []string{"10.0.0.7"}}},
	}
	w := newWorld(t, before, after)
	all := w.judge(Selection{})
	tests := []struct {
		key    string
		action Action
		detail string
	}{
		{reg + "configmaps/a/deleted", Recover, ""},
		{reg + "configmaps/a/changed", Exists, "never overwritten"},
		{reg + "configmaps/a/same", AlreadyPresent, ""},
		{reg + "configmaps/a/moved", Refused, "held by the live object " + reg + "configmaps/a/moved-here"},
		// Its namespace is chosen too (everything is), and recovered first.
		{reg + "configmaps/gone/c", Recover, ""},
		{reg + "pods/a/p", Refused, string(ContainersStarted)},
		{reg + "configmaps/re/c", Refused, "namespace re was deleted and created again since the source (UID u-re-old, now u-re-new)"},
		{reg + "configmaps/a/liar", Refused, "its key names a/liar but the object inside is a/other-name"},
		{reg + "serviceaccounts/a/sa", Refused, string(CredentialRevived)},
		{reg + "services/specs/a/old", Refused, "its cluster IP 10.0.0.7 is held by the live Service a/new"},
		// The owner is recovered in the same run: not deleted again.
		{reg + "configmaps/a/orphan", Recover, ""},
	}
	for _, tc := range tests {
		o := all[tc.key]
		if o == nil {
			t.Errorf("%s not selected", tc.key)
			continue
		}
		if o.Action != tc.action || !strings.Contains(o.Detail, tc.detail) {
			t.Errorf("%s: %s (%s), want %s (%s)", tc.key, o.Action, o.Detail, tc.action, tc.detail)
		}
	}

	t.Run("into a namespace created again, when asked", func(t *testing.T) {
		got := w.judgeWith(Selection{Namespace: "re"}, Options{IntoRecreated: true})
		if o := got[reg+"configmaps/re/c"]; o.Action != Recover {
			t.Errorf("configmap: %s (%s), want recover", o.Action, o.Detail)
		}
	})
	t.Run("a namespace deleted since and not chosen: refused", func(t *testing.T) {
		got := w.judge(Selection{Namespace: "gone"})
		if o := got[reg+"configmaps/gone/c"]; o.Action != Refused || !strings.Contains(o.Detail, "namespace gone does not exist") || !strings.Contains(o.Detail, "--with-namespace") {
			t.Errorf("configmap: %s (%s), want refused: namespace missing, naming --with-namespace", o.Action, o.Detail)
		}
	})
	t.Run("an owner not recovered: deleted again, refused", func(t *testing.T) {
		got := w.judge(Selection{Keys: []string{reg + "configmaps/a/orphan"}})
		if o := got[reg+"configmaps/a/orphan"]; o.Action != Refused || !strings.Contains(o.Detail, string(DeletedAgain)) {
			t.Errorf("orphan: %s (%s), want refused: %s", o.Action, o.Detail, DeletedAgain)
		}
	})
	t.Run("accepted impact", func(t *testing.T) {
		got := w.judge(Selection{Keys: []string{reg + "pods/a/p"}}, ContainersStarted)
		if o := got[reg+"pods/a/p"]; o.Action != Recover || len(o.Impacts) != 1 || !o.Impacts[0].Accepted {
			t.Errorf("pod: %s (%s) %+v, want recover with the accepted impact", o.Action, o.Detail, o.Impacts)
		}
	})
	t.Run("with the namespace, its objects come too", func(t *testing.T) {
		got := w.judge(Selection{Namespace: "gone", WithNamespace: true})
		if o := got[reg+"namespaces/gone"]; o == nil || o.Action != Recover {
			t.Fatalf("namespace not recovered: %+v", o)
		}
		if o := got[reg+"configmaps/gone/c"]; o.Action != Recover || len(o.Needs) != 1 || o.Needs[0].Key != reg+"namespaces/gone" {
			t.Errorf("configmap: %s (%s) needs %v", o.Action, o.Detail, o.Needs)
		}
	})
	// The README's `recover -n shop -l app=web --with-namespace`: the
	// selector chooses the objects, not their namespace.
	t.Run("with the namespace and a selector, the namespace comes too", func(t *testing.T) {
		app, _ := labels.Parse("app=db")
		got := w.judge(Selection{Namespace: "gone", Selector: app, WithNamespace: true})
		if o := got[reg+"namespaces/gone"]; o == nil || o.Action != Recover {
			t.Fatalf("namespace not recovered: %+v", o)
		}
		if o := got[reg+"configmaps/gone/c"]; o.Action != Recover {
			t.Errorf("configmap: %s (%s), want recover", o.Action, o.Detail)
		}
	})
}

func TestSelect(t *testing.T) {
	before := map[string]runtime.Object{
		reg + "namespaces/a":         nsObj("a", "u-a"),
		reg + "configmaps/a/web":     cm("a", "web", "u1", map[string]string{"app": "web"}),
		reg + "configmaps/a/db":      cm("a", "db", "u2", map[string]string{"app": "db"}),
		reg + "configmaps/b/web":     cm("b", "web", "u3", map[string]string{"app": "web"}),
		reg + "secrets/a/web":        &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web"}},
		reg + "services/specs/a/web": &corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}, ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web"}},
	}
	w := newWorld(t, before, nil)
	sel := func(s string) labels.Selector { l, _ := labels.Parse(s); return l }
	tests := []struct {
		name string
		sel  Selection
		want []string
	}{
		{"namespace", Selection{Namespace: "a"}, []string{"configmaps/a/db", "configmaps/a/web", "secrets/a/web", "services/specs/a/web"}},
		{"kind", Selection{Resource: "ConfigMap"}, []string{"configmaps/a/db", "configmaps/a/web", "configmaps/b/web"}},
		{"singular resource and name", Selection{Resource: "secret", Name: "web"}, []string{"secrets/a/web"}},
		{"services", Selection{Resource: "services"}, []string{"services/specs/a/web"}},
		{"selector", Selection{Selector: sel("app=web")}, []string{"configmaps/a/web", "configmaps/b/web"}},
		{"prefix and namespace", Selection{Keys: []string{reg + "configmaps/"}, Namespace: "b"}, []string{"configmaps/b/web"}},
		{"with namespace", Selection{Keys: []string{reg + "configmaps/a/db"}, WithNamespace: true}, []string{"namespaces/a", "configmaps/a/db"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.sel.Registry = reg
			objs, err := Select(context.Background(), w.src, tc.sel, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range objs {
				got = append(got, strings.TrimPrefix(o.Key, reg))
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("a key the source lacks", func(t *testing.T) {
		_, err := Select(context.Background(), w.src, Selection{Registry: reg, Keys: []string{reg + "configmaps/a/nope"}}, nil)
		if err == nil || !strings.Contains(err.Error(), "is not in the source") {
			t.Errorf("err %v", err)
		}
	})
}

func TestManifest(t *testing.T) {
	svc := &corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web", UID: "u", ResourceVersion: "12", CreationTimestamp: metav1.Now(),
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Spec:   corev1.ServiceSpec{ClusterIP: "10.0.0.7", ClusterIPs: []string{"10.0.0.7"}, Ports: []corev1.ServicePort{{Port: 80}}},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "1.2.3.4"}}}}}
	w := newWorld(t, map[string]runtime.Object{reg + "services/specs/a/web": svc}, nil)
	objs, err := Select(context.Background(), w.src, Selection{Registry: reg}, nil)
	if err != nil || len(objs) != 1 {
		t.Fatalf("%v %d", err, len(objs))
	}
	for _, withStatus := range []bool{false, true} {
		u, err := Manifest(objs[0], withStatus)
		if err != nil {
			t.Fatal(err)
		}
		if u.GetAPIVersion() != "v1" || u.GetKind() != "Service" || u.GetUID() != "" || u.GetResourceVersion() != "" || u.GetManagedFields() != nil || u.GetName() != "web" {
			t.Errorf("metadata not cleaned: %v", u.Object)
		}
		if _, ok := u.Object["spec"].(map[string]any)["clusterIP"]; ok {
			t.Errorf("allocated cluster IP kept: %v", u.Object["spec"])
		}
		if _, ok := u.Object["status"]; ok != withStatus {
			t.Errorf("withStatus %v: status present %v", withStatus, ok)
		}
	}
}

// TestCustomResourceAtAVersionTheCRDDropped: a custom resource stored as
// v1 cannot come back under a CRD that now has only v2.
func TestCustomResourceAtAVersionTheCRDDropped(t *testing.T) {
	crd := func(uid, version string) string {
		return `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.example.com","uid":"` + uid +
			`"},"spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"widgets","kind":"Widget"},"versions":[{"name":"` + version + `","served":true,"storage":true}]}}`
	}
	cr := `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"a","uid":"u-w"}}`
	crdKey := reg + "apiextensions.k8s.io/customresourcedefinitions/widgets.example.com"
	w := newRawWorld(t, map[string]runtime.Object{reg + "namespaces/a": nsObj("a", "u-a")}, nil,
		map[string]string{crdKey: crd("u-crd", "v1"), reg + "example.com/widgets/a/w": cr},
		map[string]string{crdKey: crd("u-crd", "v2"), reg + "example.com/widgets/a/w": ""})
	if _, err := w.kv.Delete(context.Background(), reg+"example.com/widgets/a/w"); err != nil {
		t.Fatal(err)
	}
	w.live, _ = etcdscan.NewEtcdStore(context.Background(), w.kv, 100)
	got := w.judge(Selection{Keys: []string{reg + "example.com/widgets/a/w"}})
	if o := got[reg+"example.com/widgets/a/w"]; o.Action != Refused || !strings.Contains(o.Detail, "a version the live CustomResourceDefinition no longer has (v2)") {
		t.Errorf("widget: %s (%s), want refused: version v1 dropped", o.Action, o.Detail)
	}
}

// TestUIDCheckAndUnreadableNeighbours: a corrupt plaintext value beside the
// object is no object to kube-apiserver and does not stop the UID check; an
// encrypted one nobody here can read does.
func TestUIDCheckAndUnreadableNeighbours(t *testing.T) {
	for _, tc := range []struct {
		name, neighbour string
		want            Action
	}{
		{"corrupt plaintext", "k8s\x00\x0a\x02garbage", Recover},
		{"encrypted", "k8s:enc:aescbc:v1:key1:\x01\x02\x03", Refused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newRawWorld(t, map[string]runtime.Object{reg + "namespaces/a": nsObj("a", "u-a"), reg + "configmaps/a/c": cm("a", "c", "u1", nil)},
				map[string]runtime.Object{reg + "configmaps/a/c": nil}, nil, map[string]string{reg + "configmaps/a/other": tc.neighbour})
			got := w.judge(Selection{Keys: []string{reg + "configmaps/a/c"}})
			if o := got[reg+"configmaps/a/c"]; o.Action != tc.want {
				t.Errorf("%s (%s), want %s", o.Action, o.Detail, tc.want)
			}
		})
	}
}

// TestWriteComparesWhatWasJudged: a namespace deleted and created again
// between the judgement and the write fails the write's compare; a
// namespace this run recovers is compared at the revision it wrote.
func TestWriteComparesWhatWasJudged(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, map[string]runtime.Object{
		reg + "namespaces/a":   nsObj("a", "u-a"),
		reg + "namespaces/b":   nsObj("b", "u-b"),
		reg + "configmaps/a/c": cm("a", "c", "u1", nil),
		reg + "configmaps/b/c": cm("b", "c", "u2", nil),
	}, map[string]runtime.Object{reg + "configmaps/a/c": nil, reg + "namespaces/b": nil, reg + "configmaps/b/c": nil})
	got := w.judge(Selection{Keys: []string{reg + "configmaps/a/c", reg + "configmaps/b/c", reg + "namespaces/b"}})
	var objs []*Object
	for _, k := range []string{reg + "namespaces/b", reg + "configmaps/a/c", reg + "configmaps/b/c"} {
		if got[k].Action != Recover {
			t.Fatalf("%s: %s (%s)", k, got[k].Action, got[k].Detail)
		}
		objs = append(objs, got[k])
	}
	// Namespace a is deleted and created again after the judgement.
	if _, err := w.kv.Delete(ctx, reg+"namespaces/a"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.kv.Put(ctx, reg+"namespaces/a", etcdtest.Encode(t, nsObj("a", "u-a2"))); err != nil {
		t.Fatal(err)
	}
	var journaled []etcdwrite.Result
	res, err := Write(ctx, w.kv, objs, WriteOptions{Journal: func(rs ...etcdwrite.Result) { journaled = append(journaled, rs...) }})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]etcdwrite.Outcome{reg + "namespaces/b": etcdwrite.Recovered, reg + "configmaps/a/c": etcdwrite.Refused, reg + "configmaps/b/c": etcdwrite.Recovered}
	for _, r := range res {
		if r.Outcome != want[r.Key] {
			t.Errorf("%s: %s (%s), want %s", r.Key, r.Outcome, r.Detail, want[r.Key])
		}
	}
	recovered := 0
	for _, r := range journaled {
		if r.Outcome == etcdwrite.Recovered {
			recovered++
			if r.Revision == 0 {
				t.Errorf("%s journaled as recovered without the revision it was written at", r.Key)
			}
		}
	}
	if recovered != 2 {
		t.Errorf("journaled %+v, want the two keys written as recovered", journaled)
	}
}

// TestImpactsOfWritingBack: what writing an object back sets off, each
// refused until accepted.
func TestImpactsOfWritingBack(t *testing.T) {
	ready := true
	svc := func(name string) *corev1.Service {
		return &corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}, ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name, UID: types.UID("u-" + name)},
			Spec: corev1.ServiceSpec{ClusterIP: "None"}}
	}
	apiService := func(name, service string) *apiregistrationv1.APIService {
		return &apiregistrationv1.APIService{TypeMeta: metav1.TypeMeta{APIVersion: "apiregistration.k8s.io/v1", Kind: "APIService"}, ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("u-" + name)},
			Spec: apiregistrationv1.APIServiceSpec{Group: "metrics.k8s.io", Version: "v1beta1", Service: &apiregistrationv1.ServiceReference{Namespace: "a", Name: service}}}
	}
	before := map[string]runtime.Object{
		reg + "namespaces/a":                               nsObj("a", "u-a"),
		reg + "services/specs/a/up":                        svc("up"),
		reg + "services/specs/a/down":                      svc("down"),
		reg + "apiregistration.k8s.io/apiservices/v1.up":   apiService("v1.up", "up"),
		reg + "apiregistration.k8s.io/apiservices/v1.down": apiService("v1.down", "down"),
		reg + "apiregistration.k8s.io/apiservices/v1.gone": apiService("v1.gone", "gone"),
		reg + "endpointslices/a/up-x": &discoveryv1.EndpointSlice{TypeMeta: metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"},
			ObjectMeta:  metav1.ObjectMeta{Namespace: "a", Name: "up-x", UID: "u-es", Labels: map[string]string{discoveryv1.LabelServiceName: "up"}},
			AddressType: discoveryv1.AddressTypeIPv4, Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.1.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}}},
		reg + "minions/n1": &corev1.Node{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}, ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "u-n1"}},
		reg + "certificatesigningrequests/csr1": &certificatesv1.CertificateSigningRequest{TypeMeta: metav1.TypeMeta{APIVersion: "certificates.k8s.io/v1", Kind: "CertificateSigningRequest"},
			ObjectMeta: metav1.ObjectMeta{Name: "csr1", UID: "u-csr"}, Spec: certificatesv1.CertificateSigningRequestSpec{SignerName: "kubernetes.io/kube-apiserver-client"},
			Status: certificatesv1.CertificateSigningRequestStatus{Conditions: []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue}}}},
		reg + "services/specs/a/ip": &corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}, ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "ip", UID: "u-ip"},
			Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.9", ClusterIPs: []string{"10.0.0.9"}}},
		reg + "ipaddresses/10.0.0.9": &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: "10.0.0.9", UID: "u-addr"}},
	}
	after := map[string]runtime.Object{}
	for _, k := range []string{"apiregistration.k8s.io/apiservices/v1.up", "apiregistration.k8s.io/apiservices/v1.down", "apiregistration.k8s.io/apiservices/v1.gone", "minions/n1", "certificatesigningrequests/csr1", "services/specs/a/ip"} {
		after[reg+k] = nil
	}
	w := newWorld(t, before, after)
	got := w.judge(Selection{Keys: []string{reg + "apiregistration.k8s.io/apiservices/", reg + "minions/n1", reg + "certificatesigningrequests/csr1", reg + "services/specs/a/ip"}})
	tests := []struct {
		key    string
		action Action
		detail string
	}{
		{"apiregistration.k8s.io/apiservices/v1.up", Recover, ""},
		{"apiregistration.k8s.io/apiservices/v1.down", Refused, "Service a/down, which has no ready endpoint"},
		{"apiregistration.k8s.io/apiservices/v1.gone", Refused, "Service a/gone, which is gone"},
		{"minions/n1", Refused, string(PodsCreated)},
		{"certificatesigningrequests/csr1", Refused, string(CredentialRevived)},
		{"services/specs/a/ip", Refused, "its cluster IP 10.0.0.9 is allocated now"},
	}
	for _, tc := range tests {
		o := got[reg+tc.key]
		if o == nil || o.Action != tc.action || !strings.Contains(o.Detail, tc.detail) {
			t.Errorf("%s: %+v, want %s (%s)", tc.key, o, tc.action, tc.detail)
		}
	}
}

// TestPlaintextWhereTheClusterEncrypts: without the cluster's encryption
// config, a plaintext value beside encrypted live ones is refused.
func TestPlaintextWhereTheClusterEncrypts(t *testing.T) {
	secret := &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "s", UID: "u-s"}}
	w := newRawWorld(t, map[string]runtime.Object{reg + "namespaces/a": nsObj("a", "u-a"), reg + "secrets/a/s": secret},
		map[string]runtime.Object{reg + "secrets/a/s": nil}, nil, map[string]string{reg + "secrets/a/other": "k8s:enc:aescbc:v1:key1:\x01\x02"})
	got := w.judge(Selection{Keys: []string{reg + "secrets/a/s"}})
	if o := got[reg+"secrets/a/s"]; o.Action != Refused || !strings.Contains(o.Detail, "live values under secrets/ are encrypted") {
		t.Errorf("%s (%s), want refused: plaintext where the cluster encrypts", o.Action, o.Detail)
	}
}

// TestManifestDropsWhatTheOldUIDMade: a Job's generated selector and a
// PersistentVolume's claim UID would tie the manifest to objects gone.
func TestManifestDropsWhatTheOldUIDMade(t *testing.T) {
	job := &batchv1.Job{TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"}, ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "j", UID: "u-j", Labels: map[string]string{"batch.kubernetes.io/controller-uid": "u-j", "app": "x"}},
		Spec: batchv1.JobSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/controller-uid": "u-j"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"batch.kubernetes.io/controller-uid": "u-j", "controller-uid": "u-j", "app": "x"}}}}}
	pv := &corev1.PersistentVolume{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolume"}, ObjectMeta: metav1.ObjectMeta{Name: "pv", UID: "u-pv"},
		Spec: corev1.PersistentVolumeSpec{ClaimRef: &corev1.ObjectReference{Namespace: "a", Name: "c", UID: "u-c", ResourceVersion: "7"}}}
	w := newWorld(t, map[string]runtime.Object{reg + "jobs/a/j": job, reg + "persistentvolumes/pv": pv}, nil)
	objs, err := Select(context.Background(), w.src, Selection{Registry: reg}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		u, err := Manifest(o, false)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(u.Object)
		if strings.Contains(string(raw), "u-j") || strings.Contains(string(raw), "u-c") || strings.Contains(string(raw), `"resourceVersion"`) {
			t.Errorf("%s keeps what the old UIDs made: %s", o.Key, raw)
		}
		if !strings.Contains(string(raw), `"app":"x"`) && o.Parsed.Prefix == "jobs" {
			t.Errorf("the Job's own labels were dropped: %s", raw)
		}
	}
}

// TestNamespaceUnreadableInTheSource: whether the live namespace is the
// one the object belonged to cannot be told when the source's copy cannot
// be read; refused, unless --into-recreated.
func TestNamespaceUnreadableInTheSource(t *testing.T) {
	w := newRawWorld(t, map[string]runtime.Object{reg + "configmaps/a/c": cm("a", "c", "u1", nil)}, map[string]runtime.Object{reg + "configmaps/a/c": nil},
		map[string]string{reg + "namespaces/a": "k8s\x00\x0a\x02garbage"}, nil)
	if _, err := w.kv.Put(context.Background(), reg+"namespaces/a", etcdtest.Encode(t, nsObj("a", "u-a"))); err != nil {
		t.Fatal(err)
	}
	w.live, _ = etcdscan.NewEtcdStore(context.Background(), w.kv, 100)
	for _, into := range []bool{false, true} {
		got := w.judgeWith(Selection{Keys: []string{reg + "configmaps/a/c"}}, Options{IntoRecreated: into})
		o := got[reg+"configmaps/a/c"]
		if into && o.Action != Recover || !into && (o.Action != Refused || !strings.Contains(o.Detail, "namespace a in the source cannot be read")) {
			t.Errorf("into-recreated %v: %s (%s)", into, o.Action, o.Detail)
		}
	}
}

// TestSelectCompanionsIgnoreTheFilters: the filters choose the objects;
// --with-namespace brings the namespace of each whatever -l, --name and
// --resource say, and a CRD asked for by key or name is chosen whatever -n
// and -l say (they choose its custom resources).
func TestSelectCompanionsIgnoreTheFilters(t *testing.T) {
	crdKey := reg + "apiextensions.k8s.io/customresourcedefinitions/widgets.example.com"
	crd := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.example.com","uid":"u-crd"},` +
		`"spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"widgets","kind":"Widget"},"versions":[{"name":"v1","served":true,"storage":true}]}}`
	widget := func(ns, name, app string) string {
		return `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"` + name + `","namespace":"` + ns + `","uid":"u-` + ns + name + `","labels":{"app":"` + app + `"}}}`
	}
	w := newRawWorld(t, map[string]runtime.Object{
		reg + "namespaces/shop":        nsObj("shop", "u-shop"),
		reg + "namespaces/lab":         nsObj("lab", "u-lab"),
		reg + "configmaps/shop/web":    cm("shop", "web", "u1", map[string]string{"app": "web"}),
		reg + "configmaps/shop/db":     cm("shop", "db", "u2", map[string]string{"app": "db"}),
		reg + "configmaps/lab/web":     cm("lab", "web", "u3", map[string]string{"app": "web"}),
		reg + "secrets/shop/web":       &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "u4"}},
		reg + "configmaps/nowhere/web": cm("nowhere", "web", "u5", map[string]string{"app": "web"}),
	}, nil, map[string]string{
		crdKey:                             crd,
		reg + "example.com/widgets/shop/a": widget("shop", "a", "web"),
		reg + "example.com/widgets/shop/b": widget("shop", "b", "db"),
		reg + "example.com/widgets/lab/c":  widget("lab", "c", "web"),
	}, nil)
	sel := func(s string) labels.Selector { l, _ := labels.Parse(s); return l }
	crdRel := strings.TrimPrefix(crdKey, reg)
	tests := []struct {
		name  string
		sel   Selection
		want  []string
		named []string
	}{
		{"namespace and selector bring the namespace", Selection{Namespace: "shop", Selector: sel("app=web"), WithNamespace: true},
			[]string{"namespaces/shop", "configmaps/shop/web", "example.com/widgets/shop/a"}, nil},
		{"name brings each namespace", Selection{Name: "web", WithNamespace: true},
			// nowhere is not in the source: nothing to bring.
			[]string{"namespaces/lab", "namespaces/shop", "configmaps/lab/web", "configmaps/nowhere/web", "configmaps/shop/web", "secrets/shop/web"},
			[]string{"configmaps/lab/web", "configmaps/nowhere/web", "configmaps/shop/web", "secrets/shop/web"}},
		{"resource brings the namespace", Selection{Namespace: "shop", Resource: "Secret", WithNamespace: true},
			[]string{"namespaces/shop", "secrets/shop/web"}, nil},
		{"a key and a selector that does not match it", Selection{Keys: []string{reg + "configmaps/shop/db"}, Selector: sel("app=web"), WithNamespace: true},
			nil, nil},
		{"without --with-namespace, no namespace", Selection{Namespace: "shop", Selector: sel("app=web")},
			[]string{"configmaps/shop/web", "example.com/widgets/shop/a"}, nil},
		{"a CRD by key, its resources chosen by -n and -l", Selection{Keys: []string{crdKey}, Namespace: "shop", Selector: sel("app=web")},
			[]string{crdRel, "example.com/widgets/shop/a"}, []string{crdRel}},
		{"a CRD by resource and name, with its namespaces", Selection{Resource: "crd", Name: "widgets.example.com", Namespace: "lab", WithNamespace: true},
			[]string{"namespaces/lab", crdRel, "example.com/widgets/lab/c"}, []string{crdRel}},
		{"CRDs by label: the label chooses the CRDs", Selection{Resource: "customresourcedefinitions", Selector: sel("app=web")},
			nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.sel.Resource == "crd" {
				tc.sel.Resource = "customresourcedefinitions"
			}
			tc.sel.Registry = reg
			objs, err := Select(context.Background(), w.src, tc.sel, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got, named []string
			for _, o := range objs {
				got = append(got, strings.TrimPrefix(o.Key, reg))
				if o.Named {
					named = append(named, strings.TrimPrefix(o.Key, reg))
				}
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			if strings.Join(named, " ") != strings.Join(tc.named, " ") {
				t.Errorf("named %v, want %v", named, tc.named)
			}
		})
	}
}

// TestManifestsCarryTheVerdicts: `recover -o yaml` prints what recover
// would write and says what it left out; an object changed since the
// source is never rolled back, unless asked for by name, and then only at
// the live resourceVersion it was judged at.
func TestManifestsCarryTheVerdicts(t *testing.T) {
	secret := func(name, v string) *corev1.Secret {
		return &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, UID: types.UID("u-" + name)},
			Data: map[string][]byte{"password": []byte(v)}}
	}
	svc := func(name, ip string) *corev1.Service {
		return &corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}, ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, UID: types.UID("u-" + name)},
			Spec: corev1.ServiceSpec{ClusterIP: ip, ClusterIPs: []string{ip}}}
	}
	w := newWorld(t, map[string]runtime.Object{
		reg + "namespaces/shop":          nsObj("shop", "u-shop"),
		reg + "secrets/shop/db":          secret("db", "old"),
		reg + "secrets/shop/gone":        secret("gone", "x"),
		reg + "configmaps/shop/settings": cm("shop", "settings", "u-settings", map[string]string{"v": "1"}),
		reg + "configmaps/shop/same":     cm("shop", "same", "u-same", nil),
		reg + "pods/shop/p":              &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "p", UID: "u-p"}},
		reg + "services/specs/shop/old":  svc("old", "10.0.0.7"),
		// Its IP is held too, and its UID: the first refusal holds only
		// for recover's own write, the second for the manifest too.
		reg + "services/specs/shop/dup": &corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}, ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "dup", UID: "u-new"},
			Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.7", ClusterIPs: []string{"10.0.0.7"}}},
		reg + "configmaps/shop/orphan":    cm("shop", "orphan", "u-orphan", nil, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "u-owner"}),
		reg + "configmaps/shop/unrelated": cm("shop", "unrelated", "u-unrelated", nil),
	}, map[string]runtime.Object{
		reg + "secrets/shop/db":          secret("db", "rotated"),
		reg + "secrets/shop/gone":        nil,
		reg + "configmaps/shop/settings": cm("shop", "settings", "u-settings", map[string]string{"v": "2"}),
		reg + "pods/shop/p":              nil,
		reg + "services/specs/shop/old":  nil,
		reg + "services/specs/shop/dup":  nil,
		reg + "services/specs/shop/new":  svc("new", "10.0.0.7"),
		reg + "configmaps/shop/orphan":   nil,
	})
	ctx := context.Background()
	liveRV := func(key string) string {
		resp, err := w.kv.Get(ctx, key)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("%s: %v", key, err)
		}
		return fmt.Sprint(resp.Kvs[0].ModRevision)
	}
	type want struct {
		printed bool
		// rv is the resourceVersion printed ("" none); reason a part of
		// the reason it was left out for.
		rv, reason string
	}
	tests := []struct {
		name   string
		byName []string
		want   map[string]want
	}{
		{"the verdicts", nil, map[string]want{
			"namespaces/shop":           {reason: "the live key holds the source's bytes"},
			"secrets/shop/db":           {reason: "changed since the source); never overwritten"},
			"configmaps/shop/settings":  {reason: "changed since the source); never overwritten"},
			"configmaps/shop/same":      {reason: "the live key holds the source's bytes"},
			"secrets/shop/gone":         {printed: true},
			"pods/shop/p":               {reason: string(ContainersStarted)},
			"configmaps/shop/orphan":    {reason: string(DeletedAgain)},
			"configmaps/shop/unrelated": {reason: "the live key holds the source's bytes"},
			// Refused only because two Services would share the IP in
			// etcd: the manifest, without it, is the way out.
			"services/specs/shop/old": {printed: true},
			"services/specs/shop/dup": {reason: "its UID u-new is held by the live object"},
		}},
		{"asked for by name", []string{reg + "secrets/shop/db", reg + "configmaps/shop/same", reg + "pods/shop/p"}, map[string]want{
			"namespaces/shop":           {reason: "the live key holds the source's bytes"},
			"secrets/shop/db":           {printed: true, rv: liveRV(reg + "secrets/shop/db")},
			"configmaps/shop/settings":  {reason: "never overwritten"},
			"configmaps/shop/same":      {printed: true, rv: liveRV(reg + "configmaps/shop/same")},
			"secrets/shop/gone":         {printed: true},
			"pods/shop/p":               {reason: string(ContainersStarted)},
			"configmaps/shop/orphan":    {reason: string(DeletedAgain)},
			"configmaps/shop/unrelated": {reason: "the live key holds the source's bytes"},
			"services/specs/shop/old":   {printed: true},
			"services/specs/shop/dup":   {reason: "its UID u-new is held by the live object"},
		}},
	}
	objs := w.judged(Selection{Namespace: "shop", WithNamespace: true}, Options{})
	for _, o := range objs {
		if o.ThroughAPI != (o.Key == reg+"services/specs/shop/old") {
			t.Errorf("%s: %s (%s), through the API %v", o.Key, o.Action, o.Detail, o.ThroughAPI)
		}
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			list, left, err := Manifests(objs, ManifestOptions{ByName: tc.byName})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]want{}
			for _, u := range list.Items {
				key := etcdscan.ObjectKey("", strings.ToLower(u.GetKind())+"s", u.GetNamespace(), u.GetName())
				if u.GetKind() == "Service" {
					key = etcdscan.ObjectKey("", "services/specs", u.GetNamespace(), u.GetName())
					if ip, ok, _ := unstructured.NestedString(u.Object, "spec", "clusterIP"); ok {
						t.Errorf("%s printed with the cluster IP %s another Service holds", key, ip)
					}
				}
				got[key] = want{printed: true, rv: u.GetResourceVersion()}
			}
			for _, l := range left {
				k := strings.TrimPrefix(l.Key, reg)
				if _, dup := got[k]; dup {
					t.Errorf("%s both printed and left out", k)
				}
				got[k] = want{reason: l.Reason}
			}
			for k, wt := range tc.want {
				g, ok := got[k]
				switch {
				case !ok:
					t.Errorf("%s neither printed nor left out", k)
				case g.printed != wt.printed || g.rv != wt.rv || !strings.Contains(g.reason, wt.reason):
					t.Errorf("%s: printed %v rv %q reason %q; want printed %v rv %q reason %q", k, g.printed, g.rv, g.reason, wt.printed, wt.rv, wt.reason)
				}
			}
			if len(got) != len(tc.want) {
				t.Errorf("got %d objects, want %d: %v", len(got), len(tc.want), got)
			}
		})
	}
	t.Run("named keys", func(t *testing.T) {
		named := w.judged(Selection{Namespace: "shop", Resource: "secrets", Name: "db", WithNamespace: true}, Options{})
		if got := NamedKeys(named); len(got) != 1 || got[0] != reg+"secrets/shop/db" {
			t.Errorf("NamedKeys %v, want the secret alone (not its namespace)", got)
		}
	})
	t.Run("unjudged objects", func(t *testing.T) {
		objs, err := Select(ctx, w.src, Selection{Registry: reg, Namespace: "shop"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := Manifests(objs, ManifestOptions{}); err == nil || !strings.Contains(err.Error(), "was not judged") {
			t.Errorf("err %v, want: not judged", err)
		}
	})
}

// TestWriteOrder: namespaces, then CRDs, then owners before what they own,
// each step written before the next; what rests on nothing in the run
// keeps key order.
func TestWriteOrder(t *testing.T) {
	ref := func(kind, name, uid string) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "apps/v1", Kind: kind, Name: name, UID: types.UID(uid)}
	}
	obj := func(key, uid string, owners ...metav1.OwnerReference) *Object {
		k, err := etcdscan.ParseKey(reg, reg+key)
		if err != nil {
			t.Fatal(err)
		}
		o := &Object{Key: reg + key, Parsed: k, Meta: &decode.Object{Meta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name, UID: types.UID(uid), OwnerReferences: owners}}}
		switch {
		case k.Prefix == namespacesPrefix:
			o.Stage = StageNamespaces
		case strings.HasPrefix(key, "apiextensions.k8s.io/"):
			o.Stage = StageCRDs
		default:
			o.Stage = StageObjects
		}
		return o
	}
	needing := func(o *Object, keys ...string) *Object {
		for _, k := range keys {
			o.Needs = append(o.Needs, Need{Key: reg + k})
		}
		return o
	}
	tests := []struct {
		name string
		objs []*Object
		want [][]string
	}{
		{"pods after replicasets after deployments", []*Object{
			obj("deployments/a/web", "u-d"),
			obj("pods/a/web-x-1", "u-p1", ref("ReplicaSet", "web-x", "u-rs")),
			obj("pods/a/web-x-2", "u-p2", ref("ReplicaSet", "web-x", "u-rs")),
			obj("replicasets/a/web-x", "u-rs", ref("Deployment", "web", "u-d")),
		}, [][]string{{"deployments/a/web"}, {"replicasets/a/web-x"}, {"pods/a/web-x-1", "pods/a/web-x-2"}}},
		{"an owner not in the run holds nothing back", []*Object{
			obj("configmaps/a/c", "u-c"),
			obj("pods/a/web-x-1", "u-p1", ref("ReplicaSet", "web-x", "u-live")),
		}, [][]string{{"configmaps/a/c", "pods/a/web-x-1"}}},
		{"namespaces, then CRDs, then the rest", []*Object{
			obj("namespaces/a", "u-a"),
			obj("apiextensions.k8s.io/customresourcedefinitions/widgets.example.com", "u-crd"),
			obj("configmaps/a/owner", "u-o"),
			obj("example.com/widgets/a/w", "u-w", metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "u-o"}),
		}, [][]string{{"namespaces/a"}, {"apiextensions.k8s.io/customresourcedefinitions/widgets.example.com"}, {"configmaps/a/owner"}, {"example.com/widgets/a/w"}}},
		// Without an ownerReference (the default), a StatefulSet's claim
		// keeps key order: first, so that the controller finds it.
		{"a claim from volumeClaimTemplates", []*Object{
			obj("persistentvolumeclaims/a/data-db-0", "u-pvc"),
			obj("statefulsets/a/db", "u-sts"),
		}, [][]string{{"persistentvolumeclaims/a/data-db-0", "statefulsets/a/db"}}},
		{"a claim its StatefulSet owns (retention policy)", []*Object{
			obj("persistentvolumeclaims/a/data-db-0", "u-pvc", ref("StatefulSet", "db", "u-sts")),
			obj("statefulsets/a/db", "u-sts"),
		}, [][]string{{"statefulsets/a/db"}, {"persistentvolumeclaims/a/data-db-0"}}},
		{"a cycle keeps key order, after what does not rest on it", []*Object{
			obj("configmaps/a/a", "u-a", ref("ConfigMap", "b", "u-b")),
			obj("configmaps/a/b", "u-b", ref("ConfigMap", "a", "u-a")),
			obj("configmaps/a/c", "u-c"),
			obj("configmaps/a/d", "u-d", ref("ConfigMap", "a", "u-a")),
		}, [][]string{{"configmaps/a/c"}, {"configmaps/a/a", "configmaps/a/b", "configmaps/a/d"}}},
		{"an object of another namespace with the UID is no owner", []*Object{
			obj("pods/b/p", "u-p", ref("ReplicaSet", "web-x", "u-rs")),
			obj("replicasets/a/web-x", "u-rs"),
		}, [][]string{{"pods/b/p", "replicasets/a/web-x"}}},
		{"a key it needs", []*Object{
			needing(obj("configmaps/a/c", "u-c"), "secrets/a/s"),
			obj("secrets/a/s", "u-s"),
		}, [][]string{{"secrets/a/s"}, {"configmaps/a/c"}}},
		{"nothing", nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got [][]string
			for _, step := range WriteOrder(tc.objs) {
				var keys []string
				for _, o := range step {
					keys = append(keys, strings.TrimPrefix(o.Key, reg))
				}
				got = append(got, keys)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestWriteOwnersFirst: a Deployment, its ReplicaSet and its Pod are
// written in that order, each in a transaction of its own that the next
// compares; a dependent whose owner was not written is not written (the
// garbage collector would delete it again).
func TestWriteOwnersFirst(t *testing.T) {
	ctx := context.Background()
	dep := &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web", UID: "u-d"}}
	owned := func(kind, name, uid string) []metav1.OwnerReference {
		ctrl := true
		return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name, UID: types.UID(uid), Controller: &ctrl}}
	}
	rs := &appsv1.ReplicaSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"}, ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web-x", UID: "u-rs", OwnerReferences: owned("Deployment", "web", "u-d")}}
	pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web-x-1", UID: "u-p", OwnerReferences: owned("ReplicaSet", "web-x", "u-rs")}}
	keys := []string{reg + "deployments/a/web", reg + "replicasets/a/web-x", reg + "pods/a/web-x-1"}
	for _, meanwhile := range []bool{false, true} {
		t.Run(fmt.Sprintf("the ReplicaSet created meanwhile %v", meanwhile), func(t *testing.T) {
			w := newWorld(t, map[string]runtime.Object{reg + "namespaces/a": nsObj("a", "u-a"), keys[0]: dep, keys[1]: rs, keys[2]: pod},
				map[string]runtime.Object{keys[0]: nil, keys[1]: nil, keys[2]: nil})
			// In Select's order: pods/ before replicasets/.
			objs := w.judged(Selection{Namespace: "a"}, Options{}, PodsCreated, ContainersStarted)
			got := map[string]*Object{}
			for _, o := range objs {
				got[o.Key] = o
			}
			for i, k := range keys {
				o := got[k]
				if o.Action != Recover {
					t.Fatalf("%s: %s (%s)", k, o.Action, o.Detail)
				}
				if i > 0 && !strings.Contains(fmt.Sprint(o.Needs), keys[i-1]) {
					t.Errorf("%s does not need its owner %s: %+v", k, keys[i-1], o.Needs)
				}
			}
			if meanwhile {
				// Someone else's ReplicaSet of that name (another UID).
				other := rs.DeepCopy()
				other.UID = "u-other"
				if _, err := w.kv.Put(ctx, keys[1], etcdtest.Encode(t, other)); err != nil {
					t.Fatal(err)
				}
			}
			results, err := Write(ctx, w.kv, objs, WriteOptions{})
			if err != nil {
				t.Fatal(err)
			}
			res := map[string]etcdwrite.Result{}
			for _, r := range results {
				res[r.Key] = r
			}
			if meanwhile {
				want := []etcdwrite.Outcome{etcdwrite.Recovered, etcdwrite.Conflict, etcdwrite.Refused}
				for i, k := range keys {
					if r := res[k]; r.Outcome != want[i] {
						t.Errorf("%s: %s (%s), want %s", k, r.Outcome, r.Detail, want[i])
					}
				}
				if d := res[keys[2]].Detail; !strings.Contains(d, "its owner ReplicaSet web-x was not written by this recovery: the garbage collector would delete it again") {
					t.Errorf("pod refused for %q", d)
				}
				return
			}
			var revs []int64
			for _, k := range keys {
				if r := res[k]; r.Outcome != etcdwrite.Recovered {
					t.Fatalf("%s: %s (%s)", k, r.Outcome, r.Detail)
				}
				resp, err := w.kv.Get(ctx, k)
				if err != nil || len(resp.Kvs) != 1 {
					t.Fatalf("%s: %v", k, err)
				}
				revs = append(revs, resp.Kvs[0].CreateRevision)
			}
			if !(revs[0] < revs[1] && revs[1] < revs[2]) {
				t.Errorf("written at revisions %v: the owners are not written first, each before the next", revs)
			}
		})
	}
}

// TestWriteOwnersInACycle: two objects that own each other are refused as
// deleted again (each is judged first with the other not recovered yet);
// accepted, they are written in one step, neither refused for the other
// not being written yet.
func TestWriteOwnersInACycle(t *testing.T) {
	ctx := context.Background()
	ref := func(name, uid string) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: name, UID: types.UID(uid)}
	}
	w := newWorld(t, map[string]runtime.Object{
		reg + "namespaces/a":   nsObj("a", "u-a"),
		reg + "configmaps/a/x": cm("a", "x", "u-x", nil, ref("y", "u-y")),
		reg + "configmaps/a/y": cm("a", "y", "u-y", nil, ref("x", "u-x")),
	}, map[string]runtime.Object{reg + "configmaps/a/x": nil, reg + "configmaps/a/y": nil})
	for _, o := range w.judged(Selection{Namespace: "a"}, Options{}) {
		if o.Parsed.Prefix == "configmaps" && (o.Action != Refused || !strings.Contains(o.Detail, string(DeletedAgain))) {
			t.Errorf("%s: %s (%s), want refused: %s", o.Key, o.Action, o.Detail, DeletedAgain)
		}
	}
	objs := w.judged(Selection{Namespace: "a"}, Options{}, DeletedAgain)
	for _, o := range objs {
		if o.Parsed.Prefix == "configmaps" && (o.Action != Recover || len(o.Needs) != 2) {
			t.Fatalf("%s: %s (%s) needs %v", o.Key, o.Action, o.Detail, o.Needs)
		}
	}
	res, err := Write(ctx, w.kv, objs, WriteOptions{})
	if err != nil || len(res) != 2 {
		t.Fatal(res, err)
	}
	for _, r := range res {
		if r.Outcome != etcdwrite.Recovered {
			t.Errorf("%s: %s (%s)", r.Key, r.Outcome, r.Detail)
		}
	}
}
