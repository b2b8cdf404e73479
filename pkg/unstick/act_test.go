package unstick

import (
	"context"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/catalog"
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
