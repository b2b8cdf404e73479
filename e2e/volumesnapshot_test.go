package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/regghost/regghost/pkg/impact"
)

// createSnapshotCRDs serves external-snapshotter's VolumeSnapshot
// (namespaced) and VolumeSnapshotContent (cluster-scoped) at v1.
func (c *cluster) createSnapshotCRDs(t *testing.T) {
	t.Helper()
	for _, r := range []struct{ plural, kind, scope string }{
		{"volumesnapshots", "VolumeSnapshot", "Namespaced"},
		{"volumesnapshotcontents", "VolumeSnapshotContent", "Cluster"},
	} {
		crd := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			// A *.k8s.io group needs the approval annotation; the real CRDs carry this one.
			"metadata": map[string]any{"name": r.plural + ".snapshot.storage.k8s.io", "annotations": map[string]any{"api-approved.kubernetes.io": "https://github.com/kubernetes-csi/external-snapshotter/pull/419"}},
			"spec": map[string]any{"group": "snapshot.storage.k8s.io", "scope": r.scope,
				"names": map[string]any{"plural": r.plural, "singular": strings.ToLower(r.kind), "kind": r.kind, "listKind": r.kind + "List"},
				"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true, "subresources": map[string]any{"status": map[string]any{}},
					"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}},
		}}
		_, err := c.dyn.Resource(crdGVR).Create(context.Background(), crd, metav1.CreateOptions{})
		mustNoErr(t, "create CRD "+r.plural, err)
	}
	waitFor(t, 60*time.Second, "snapshot CRDs served", func() error {
		res, err := c.kube.Discovery().ServerResourcesForGroupVersion("snapshot.storage.k8s.io/v1")
		if err == nil && len(res.APIResources) < 2 {
			return errString("not all served")
		}
		return err
	})
	c.waitLocalAPIService(t, "v1.snapshot.storage.k8s.io")
	// The API approval controller writes a condition on each CRD of a
	// *.k8s.io group, in the background too.
	for _, name := range []string{"volumesnapshots.snapshot.storage.k8s.io", "volumesnapshotcontents.snapshot.storage.k8s.io"} {
		waitFor(t, 60*time.Second, "CRD "+name+"'s API approval condition", func() error {
			u, err := c.dyn.Resource(crdGVR).Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			for _, cd := range conds {
				if m, _ := cd.(map[string]any); m["type"] == "KubernetesAPIApprovalPolicyConformant" {
					return nil
				}
			}
			return errString("not written yet")
		})
	}
}

// TestPurgeNamesTheStorageSnapshotBoundFromTheContentSide: a VolumeSnapshot
// whose status is not written yet is bound only by its content's
// spec.volumeSnapshotRef (the controllers write that side first); with
// deletionPolicy Delete, its purge destroys the storage snapshot. The dry
// run names it, and the purge is refused until it is accepted, as for a
// volume.
func TestPurgeNamesTheStorageSnapshotBoundFromTheContentSide(t *testing.T) {
	parallel(t)
	c := startCluster(t, clusterOptions{})
	ctx := context.Background()
	c.createSnapshotCRDs(t)
	c.createNamespace(t, "backups")
	snaps := schema.GroupVersionResource{Group: "snapshot.storage.k8s.io", Version: "v1", Resource: "volumesnapshots"}
	contents := schema.GroupVersionResource{Group: "snapshot.storage.k8s.io", Version: "v1", Resource: "volumesnapshotcontents"}
	var snap *unstructured.Unstructured
	waitFor(t, 30*time.Second, "create the VolumeSnapshot", func() (err error) {
		snap, err = c.dyn.Resource(snaps).Namespace("backups").Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshot", "metadata": map[string]any{"name": "nightly", "namespace": "backups"},
			"spec": map[string]any{"source": map[string]any{"persistentVolumeClaimName": "data"}, "volumeSnapshotClassName": "csi-snapclass"}}}, metav1.CreateOptions{})
		return err
	})
	_, err := c.dyn.Resource(contents).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshotContent", "metadata": map[string]any{"name": "snapcontent-nightly"},
		"spec": map[string]any{"deletionPolicy": "Delete", "driver": "hostpath.csi.k8s.io", "source": map[string]any{"volumeHandle": "vol-1"},
			"volumeSnapshotRef": map[string]any{"kind": "VolumeSnapshot", "apiVersion": "snapshot.storage.k8s.io/v1", "namespace": "backups", "name": "nightly", "uid": string(snap.GetUID())}}}}, metav1.CreateOptions{})
	mustNoErr(t, "create the VolumeSnapshotContent", err)
	c.forceDelete(t, "/registry/namespaces/backups")
	snapKey := "/registry/snapshot.storage.k8s.io/volumesnapshots/backups/nightly"
	before := c.state(t)

	out, errOut, code := c.regghost(t, "", "purge", "-n", "backups")
	flat := strings.Join(strings.Fields(out), " ")
	for _, want := range []string{snapKey, "VolumeSnapshotContent snapcontent-nightly is bound to it by its spec.volumeSnapshotRef", "destroys the storage snapshot",
		impact.AcceptImpactFlag + " " + string(impact.SnapshotDestroyed)} {
		if !strings.Contains(flat, want) {
			t.Errorf("purge dry run (exit %d) does not say %q:\n%s\n%s", code, want, out, errOut)
		}
	}
	root := t.TempDir()
	out, errOut, code = c.regghost(t, "", "purge", "-n", "backups", "--confirm", "--yes", "--backup-dir", root)
	if code == 0 || !strings.Contains(errOut+out, impact.AcceptImpactFlag+" "+string(impact.SnapshotDestroyed)) {
		t.Errorf("purge --confirm without the accept: exit %d, want a refusal naming %s %s:\n%s\n%s", code, impact.AcceptImpactFlag, impact.SnapshotDestroyed, out, errOut)
	}
	c.assertUnchanged(t, "a refused purge", before)
	out, errOut, code = c.regghost(t, "", "purge", "-n", "backups", "--confirm", "--yes", "--backup-dir", root, impact.AcceptImpactFlag, string(impact.SnapshotDestroyed))
	if code != 0 {
		t.Fatalf("purge with the accept: exit %d: %s\n%s", code, errOut, out)
	}
	c.assertChangedOnly(t, "purge", before, []string{snapKey})
	if !c.absent(t, snapKey) {
		t.Error("the snapshot is still there")
	}
}
