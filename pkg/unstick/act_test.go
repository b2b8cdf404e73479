package unstick

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/catalog"
	"github.com/regghost/regghost/pkg/etcdwrite"
)

// TestRunBacksUpWithTheClusterID: unstick's backup names the etcd cluster
// it was taken from, as purge's does, so restore refuses to write it into
// another one; a key's lease goes into it with the TTL it has left.
func TestRunBacksUpWithTheClusterID(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	ctx := context.Background()
	key := "/registry/example.com/widgets/app/w1"
	lease, err := cli.Grant(ctx, 600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, key, `{"kind":"Widget"}`, clientv3.WithLease(lease.ID)); err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	rev := resp.Kvs[0].ModRevision
	gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	w := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w1", "namespace": "app", "resourceVersion": fmt.Sprint(rev), "finalizers": []any{"example.com/cleanup"}}}}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "WidgetList"}, w)
	a := &Analysis{Target: "namespace app", Key: "/registry/namespaces/app", Exists: true, Terminating: true,
		Blockers: []Blocker{{Key: key, Kind: "Widget", Namespace: "app", Name: "w1", Finalizers: []string{"example.com/cleanup"}, ModRevision: rev,
			Resource: catalog.Resource{Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource, Kind: "Widget", Namespaced: true, Custom: true},
			Remove:   []string{"example.com/cleanup"}}}}
	res, err := Run(ctx, a, "/registry/", Options{Client: cli, Dynamic: dyn, BackupRoot: t.TempDir(), Wait: time.Second})
	if res == nil {
		t.Fatalf("unstick: %v", err)
	}
	b, err := backup.ReadBackup(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := cli.Status(ctx, cli.Endpoints()[0])
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("%x", st.Header.ClusterId); b.ClusterID != want {
		t.Errorf("backup cluster ID %q, want %q", b.ClusterID, want)
	}
	here, err := backup.ReadIdentity(ctx, cli, "/registry/", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := backup.SameCluster(b.Of(), here); err != nil {
		t.Errorf("restore into the same cluster: %v", err)
	}
	b.ClusterID = "deadbeef"
	if err := backup.SameCluster(b.Of(), here); err == nil {
		t.Error("a backup of another cluster was let through")
	}
	if e := b.Entries[0]; e.Lease != int64(lease.ID) || e.LeaseTTL <= 0 || e.LeaseTTL > 600 || e.LeaseTTLUnknown != "" {
		t.Errorf("backup entry lease %x ttl %d (%q)", e.Lease, e.LeaseTTL, e.LeaseTTLUnknown)
	}
}

// TestNudgeWritesOnlyTheNamespaceItRead: the nudge the plan showed is
// written on the namespace the plan read (its UID, also in the patch as
// the API server's precondition) and journaled to the audit log as
// unstick's; a namespace deleted and created again under its name (GitOps)
// is never annotated, before the patch or between the read and the patch,
// and says so; a namespace already gone is not an error; a plan without a
// nudge writes nothing.
func TestNudgeWritesOnlyTheNamespaceItRead(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	nsGVR := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	const key = "/registry/namespaces/app"
	namespace := func(uid string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
			"metadata": map[string]any{"name": "app", "uid": uid, "resourceVersion": "5"}}}
	}
	plan := &NudgePlan{Key: key, Name: "app", UID: "uid-reviewed", Annotation: NudgeAnnotation}
	tests := []struct {
		name string
		// served is the namespace's UID the API server serves ("" none).
		served string
		nudge  *NudgePlan
		// recreateOnPatch creates the namespace again as the patch arrives:
		// the API server refuses the patch's UID.
		recreateOnPatch bool
		want            etcdwrite.Outcome
		wantErr         error
		// requests are the patches sent; patched says one was applied.
		requests int
		patched  bool
	}{
		{name: "the namespace reviewed", served: "uid-reviewed", nudge: plan, want: Nudged, requests: 1, patched: true},
		{name: "deleted and created again", served: "uid-new", nudge: plan, want: etcdwrite.SkippedChanged, wantErr: ErrRecreated},
		{name: "created again between the read and the patch", served: "uid-reviewed", nudge: plan, recreateOnPatch: true, want: etcdwrite.SkippedChanged, wantErr: ErrRecreated, requests: 1},
		{name: "gone already", nudge: plan, want: etcdwrite.SkippedGone},
		{name: "no nudge in the plan", served: "uid-reviewed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var objs []runtime.Object
			if tt.served != "" {
				objs = append(objs, namespace(tt.served))
			}
			dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{nsGVR: "NamespaceList"}, objs...)
			if tt.recreateOnPatch {
				dyn.PrependReactor("patch", "namespaces", func(k8stesting.Action) (bool, runtime.Object, error) {
					if err := dyn.Tracker().Delete(nsGVR, "", "app"); err != nil {
						return true, nil, err
					}
					if err := dyn.Tracker().Add(namespace("uid-new")); err != nil {
						return true, nil, err
					}
					return true, nil, apierrors.NewInvalid(schema.GroupKind{Kind: "Namespace"}, "app",
						field.ErrorList{field.Invalid(field.NewPath("metadata", "uid"), "uid-reviewed", "field is immutable")})
				})
			}
			a := &Analysis{Target: "namespace app", Key: key, UID: "uid-reviewed", Exists: true, Terminating: true, Nudge: tt.nudge}
			dir := t.TempDir()
			now := time.Date(2026, 12, 5, 19, 48, 0, 0, time.UTC)
			r, err := Nudge(context.Background(), a, "/registry/", dir, Options{Client: cli, Dynamic: dyn, Now: func() time.Time { return now }})
			if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("Nudge: %v, want %v", err, tt.wantErr)
			}
			var got etcdwrite.Outcome
			if r != nil {
				got = r.Outcome
			}
			if got != tt.want {
				t.Fatalf("outcome %q (%+v), want %q", got, r, tt.want)
			}
			// Patched only when it is the namespace reviewed, with its UID.
			var patches []string
			for _, act := range dyn.Actions() {
				if p, ok := act.(k8stesting.PatchAction); ok {
					patches = append(patches, string(p.GetPatch()))
				}
			}
			if len(patches) != tt.requests {
				t.Errorf("patches %q, want %d", patches, tt.requests)
			}
			for _, p := range patches {
				if !strings.Contains(p, `"uid":"uid-reviewed"`) {
					t.Errorf("patch %s carries no precondition on the UID reviewed", p)
				}
			}
			if tt.served != "" {
				ns, err := dyn.Resource(nsGVR).Get(context.Background(), "app", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if _, on := ns.GetAnnotations()[NudgeAnnotation]; on != tt.patched {
					t.Errorf("namespace %s annotations %v, want annotated %v", ns.GetUID(), ns.GetAnnotations(), tt.patched)
				}
			}
			// Journaled as unstick's, what was done or left alone.
			var journaled []string
			data, err := os.ReadFile(filepath.Join(dir, backup.AuditFile))
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
				var rec backup.AuditRecord
				if json.Unmarshal([]byte(line), &rec) == nil {
					journaled = append(journaled, rec.Action+" "+rec.Key+" "+string(rec.Outcome))
				}
			}
			var want []string
			if tt.want != "" {
				want = []string{backup.ActionUnstick + " " + key + " " + string(tt.want)}
			}
			if strings.Join(journaled, "\n") != strings.Join(want, "\n") {
				t.Errorf("audit log %q, want %q", journaled, want)
			}
		})
	}
}
