package repair

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/regghost/regghost/pkg/impact"
)

// Retained is the outcome of a PersistentVolume set to Retain before its
// claim was deleted.
const Retained Outcome = "retained"

// RoleRetainedVolume marks a backup entry that holds a PersistentVolume as
// it was before purge set it to Retain. restore never writes it back: the
// original asks for the storage to be deleted.
const RoleRetainedVolume = "retained-volume"

// RetainVolumes sets each volume's reclaim policy to Retain through the API
// server, each patch preconditioned on the resourceVersion the scan saw, and
// reads it back. The PV controller then keeps the volume and its data when
// the claim goes. It stops at the first failure.
func RetainVolumes(ctx context.Context, kube kubernetes.Interface, vols []impact.Volume) ([]Result, error) {
	if len(vols) == 0 {
		return nil, nil
	}
	if kube == nil {
		return nil, errors.New(impact.RetainVolumesFlag + " needs the API server: the reclaim policy is changed through it, never in etcd")
	}
	var results []Result
	for _, v := range vols {
		patch := fmt.Sprintf(`{"metadata":{"resourceVersion":"%d"},"spec":{"persistentVolumeReclaimPolicy":"Retain"}}`, v.ModRevision)
		if _, err := kube.CoreV1().PersistentVolumes().Patch(ctx, v.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			return results, fmt.Errorf("set PersistentVolume %s to Retain (preconditioned on resourceVersion %d): %w", v.Name, v.ModRevision, err)
		}
		got, err := kube.CoreV1().PersistentVolumes().Get(ctx, v.Name, metav1.GetOptions{})
		if err != nil {
			return results, fmt.Errorf("read back PersistentVolume %s: %w", v.Name, err)
		}
		if got.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain {
			return results, fmt.Errorf("PersistentVolume %s reads back with reclaim policy %s, not Retain", v.Name, got.Spec.PersistentVolumeReclaimPolicy)
		}
		results = append(results, Result{Key: v.Key, Outcome: Retained,
			Detail: fmt.Sprintf("reclaim policy %s -> Retain through the API server (resourceVersion %d -> %s); the original is in the backup", v.ReclaimPolicy, v.ModRevision, got.ResourceVersion)})
	}
	return results, nil
}
