package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// mix is the share of each kind of object in the loaded keyspace, in percent.
var mix = []struct {
	resource string
	percent  int
}{{"pods", 35}, {"events", 20}, {"configmaps", 14}, {"replicasets", 10}, {"secrets", 10}, {"example.com/widgets", 11}}

// loadSpec says how much to load.
type loadSpec struct {
	keys       int
	namespaces int
	ghosts     int
	// pad adds that many bytes to every object (an annotation), for a db
	// file of several GiB.
	pad int
}

// padding is the annotation value added to every object when loadSpec.pad is set.
var padding string

type kvPair struct{ k, v string }

// load writes spec.keys real encoded objects across spec.namespaces
// namespaces, plus spec.ghosts ghosts: objects in namespaces without a
// namespace key, custom resources of a CRD that is not there, and corrupt
// values. It returns the name of one namespace, for the --namespace scan.
func load(ctx context.Context, cli *clientv3.Client, spec loadSpec) (string, error) {
	ser := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	enc := func(o runtime.Object) string {
		var b bytes.Buffer
		if err := ser.Encode(o, &b); err != nil {
			panic(err)
		}
		return b.String()
	}
	padding = strings.Repeat("x", spec.pad)
	perBatch := 100
	if spec.pad > 0 {
		// etcd takes requests of at most 1.5 MiB and 128 operations.
		perBatch = min(perBatch, max(1, (1<<20)/(spec.pad+1024)))
	}
	work := make(chan []kvPair, 64)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for batch := range work {
				ops := make([]clientv3.Op, len(batch))
				for i, p := range batch {
					ops[i] = clientv3.OpPut(p.k, p.v)
				}
				if _, err := cli.Txn(ctx).Then(ops...).Commit(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var batch []kvPair
	emit := func(k, v string) {
		batch = append(batch, kvPair{k, v})
		if len(batch) == perBatch {
			work <- batch
			batch = nil
		}
	}
	emit("/registry/apiextensions.k8s.io/customresourcedefinitions/widgets.example.com",
		`{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.example.com","uid":"`+uuid.NewString()+`"},`+
			`"spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"widgets","singular":"widget","kind":"Widget","listKind":"WidgetList"},`+
			`"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]},`+
			`"status":{"storedVersions":["v1"],"acceptedNames":{"plural":"widgets","kind":"Widget"}}}`)
	// The namespaces every cluster has: without them the keyspace does not
	// look like a whole cluster's, and scan leaves orphans unjudged.
	for _, ns := range []string{"default", "kube-system"} {
		emit("/registry/namespaces/"+ns, enc(&corev1.Namespace{TypeMeta: tm("v1", "Namespace"), ObjectMeta: om("", ns)}))
	}
	healthy := spec.keys - spec.ghosts - 2
	perNS := healthy / spec.namespaces
	for n := 0; n < spec.namespaces; n++ {
		ns := fmt.Sprintf("team-%04d", n)
		emit("/registry/namespaces/"+ns, enc(&corev1.Namespace{TypeMeta: tm("v1", "Namespace"), ObjectMeta: om("", ns)}))
		writeNamespace(ns, perNS-1, enc, emit)
	}
	// Ghosts: a third orphaned, a third of a missing CRD, a third corrupt.
	g := spec.ghosts / 3
	writeNamespace("deleted-team", g, enc, emit)
	for i := 0; i < g; i++ {
		emit(fmt.Sprintf("/registry/gone.example.com/gizmos/team-0000/gizmo-%d", i),
			fmt.Sprintf(`{"apiVersion":"gone.example.com/v1","kind":"Gizmo","metadata":{"name":"gizmo-%d","namespace":"team-0000","uid":"%s"}}`, i, uuid.NewString()))
	}
	for i := 0; i < spec.ghosts-2*g; i++ {
		emit(fmt.Sprintf("/registry/configmaps/team-0001/corrupt-%d", i), "k8s\x00\x0a\x02v1\x12\x09ConfigMap\x1a\xff\xff")
	}
	if len(batch) > 0 {
		work <- batch
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		return "", err
	default:
	}
	return "team-0002", nil
}

// writeNamespace writes n objects of the mix into one namespace: pods owned
// by replica sets, events about the pods, configmaps, secrets and widgets.
func writeNamespace(ns string, n int, enc func(runtime.Object) string, emit func(k, v string)) {
	counts := map[string]int{}
	for _, m := range mix {
		counts[m.resource] = n * m.percent / 100
	}
	counts["pods"] += n - sum(counts)
	rsUID := make([]types.UID, max(counts["replicasets"], 1))
	for i := range rsUID {
		rsUID[i] = types.UID(uuid.NewString())
		name := fmt.Sprintf("app-%d", i)
		meta := om(ns, name)
		meta.UID = rsUID[i]
		emit(key("replicasets", ns, name), enc(&appsv1.ReplicaSet{TypeMeta: tm("apps/v1", "ReplicaSet"), ObjectMeta: meta,
			Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}, Template: podTemplate(name)}}))
	}
	for i := 0; i < counts["pods"]; i++ {
		rs := i % len(rsUID)
		name := fmt.Sprintf("app-%d-%08x", rs, i)
		meta := om(ns, name)
		meta.Labels = map[string]string{"app": fmt.Sprintf("app-%d", rs), "pod-template-hash": "5d8f7c9b4"}
		meta.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: fmt.Sprintf("app-%d", rs), UID: rsUID[rs]}}
		tmpl := podTemplate(name)
		emit(key("pods", ns, name), enc(&corev1.Pod{TypeMeta: tm("v1", "Pod"), ObjectMeta: meta, Spec: tmpl.Spec,
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.1.2.3", HostIP: "192.0.2.10"}}))
	}
	for i := 0; i < counts["events"]; i++ {
		name := fmt.Sprintf("app-0.%016x", i)
		emit(key("events", ns, name), enc(&corev1.Event{TypeMeta: tm("v1", "Event"), ObjectMeta: om(ns, name),
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "app-0"}, Reason: "Pulled",
			Message: "Successfully pulled image \"registry.example.com/app:1.2.3\" in 1.2s", Type: "Normal", Count: 1}))
	}
	for i := 0; i < counts["configmaps"]; i++ {
		name := fmt.Sprintf("config-%d", i)
		emit(key("configmaps", ns, name), enc(&corev1.ConfigMap{TypeMeta: tm("v1", "ConfigMap"), ObjectMeta: om(ns, name),
			Data: map[string]string{"app.yaml": "log: info\nreplicas: 3\nfeatures: [a, b, c]\n", "endpoint": "https://api.example.com"}}))
	}
	for i := 0; i < counts["secrets"]; i++ {
		name := fmt.Sprintf("secret-%d", i)
		emit(key("secrets", ns, name), enc(&corev1.Secret{TypeMeta: tm("v1", "Secret"), ObjectMeta: om(ns, name),
			Data: map[string][]byte{"password": []byte("hunter2hunter2hunter2"), "token": bytes.Repeat([]byte("x"), 200)}}))
	}
	for i := 0; i < counts["example.com/widgets"]; i++ {
		name := fmt.Sprintf("widget-%d", i)
		emit(key("example.com/widgets", ns, name), fmt.Sprintf(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":%q,"namespace":%q,"uid":%q,"creationTimestamp":"2026-12-01T10:00:00Z"},"spec":{"size":3,"color":"blue","pad":%q}}`, name, ns, uuid.NewString(), padding))
	}
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func key(resource, ns, name string) string { return "/registry/" + resource + "/" + ns + "/" + name }

func tm(apiVersion, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}
}

func om(ns, name string) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uuid.NewString()),
		CreationTimestamp: metav1.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), ResourceVersion: ""}
	if padding != "" {
		m.Annotations = map[string]string{"bench.regghost.io/pad": padding}
	}
	return m
}

func podTemplate(name string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app", Image: "registry.example.com/app:1.2.3",
			Env:   []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}, {Name: "PORT", Value: "8080"}},
			Ports: []corev1.ContainerPort{{ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
		}}, NodeName: "node-1", ServiceAccountName: "default"},
	}
}
