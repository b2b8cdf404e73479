package repair

import (
	"context"
	"errors"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/impact"
)

// RetainVolumes sets each volume's reclaim policy to Retain (RetainVolume).
// It stops at the first failure.
func RetainVolumes(ctx context.Context, kube kubernetes.Interface, vols []impact.Volume) ([]etcdwrite.Result, error) {
	if len(vols) == 0 {
		return nil, nil
	}
	var results []etcdwrite.Result
	for _, v := range vols {
		r, err := RetainVolume(ctx, kube, v)
		if err != nil {
			return results, err
		}
		results = append(results, r)
	}
	return results, nil
}

// errNoKube refuses a Retain without the API server.
var errNoKube = errors.New(impact.RetainVolumesFlag + " needs the API server: the reclaim policy is changed through it, never in etcd")

// RetainVolume sets a volume's reclaim policy to Retain through the API
// server, the patch preconditioned on the resourceVersion the scan saw,
// and reads it back on a context of its own (ReadBackContext). The PV
// controller then keeps the volume and its data when the claim goes.
func RetainVolume(ctx context.Context, kube kubernetes.Interface, v impact.Volume) (etcdwrite.Result, error) {
	if kube == nil {
		return etcdwrite.Result{}, errNoKube
	}
	patch := fmt.Sprintf(`{"metadata":{"resourceVersion":"%d"},"spec":{"persistentVolumeReclaimPolicy":"Retain"}}`, v.ModRevision)
	if _, err := kube.CoreV1().PersistentVolumes().Patch(ctx, v.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return etcdwrite.Result{}, fmt.Errorf("set PersistentVolume %s to Retain (preconditioned on resourceVersion %d): %w", v.Name, v.ModRevision, err)
	}
	rctx, cancel := etcdwrite.ReadBackContext(ctx)
	defer cancel()
	got, err := kube.CoreV1().PersistentVolumes().Get(rctx, v.Name, metav1.GetOptions{})
	if err != nil {
		return etcdwrite.Result{}, fmt.Errorf("read back PersistentVolume %s: %w", v.Name, err)
	}
	if got.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain {
		return etcdwrite.Result{}, fmt.Errorf("PersistentVolume %s reads back with reclaim policy %s, not Retain", v.Name, got.Spec.PersistentVolumeReclaimPolicy)
	}
	return etcdwrite.Result{Key: v.Key, Outcome: etcdwrite.Retained,
		Detail: fmt.Sprintf("reclaim policy %s -> Retain through the API server (resourceVersion %d -> %s); the original is in the backup", v.ReclaimPolicy, v.ModRevision, got.ResourceVersion)}, nil
}

// retainer sets the volumes of a purge to Retain, each right before the
// transaction that deletes the first target whose deletion would destroy
// its storage, and only while that target is still to be deleted: its key
// at the backed-up revision and the keys its verdict rests on still absent.
// A volume whose targets are all left (changed since the scan, or after
// the deletes stopped) is left as it was. It is the beforeDelete of a
// purge's deletes.
type retainer struct {
	kube    kubernetes.Interface
	kv      clientv3.KV
	entries []backup.Entry
	// vols are the volumes each entry's deletion would destroy.
	vols map[int][]impact.Volume
	// done holds the keys of the volumes set to Retain.
	done map[string]bool
	// byEntry are the Retain results, by the entry they were done for.
	byEntry map[int][]etcdwrite.Result
	journal func(etcdwrite.Result)
}

// newRetainer plans the Retain patches of the entries a purge deletes.
func newRetainer(kube kubernetes.Interface, kv clientv3.KV, plan *Plan, entries []backup.Entry, journal func(etcdwrite.Result)) *retainer {
	r := &retainer{kube: kube, kv: kv, entries: entries, vols: map[int][]impact.Volume{}, done: map[string]bool{}, byEntry: map[int][]etcdwrite.Result{}, journal: journal}
	for i, e := range entries {
		for _, eff := range plan.Effects(e.Key) {
			if eff.Kind == impact.StorageDestroyed && eff.Volume != nil {
				r.vols[i] = append(r.vols[i], *eff.Volume)
			}
		}
	}
	return r
}

func (r *retainer) needs(i int) bool {
	for _, v := range r.vols[i] {
		if !r.done[v.Key] {
			return true
		}
	}
	return false
}

func (r *retainer) run(ctx context.Context, i int) error {
	e := r.entries[i]
	doomed, err := stillDoomed(ctx, r.kv, e)
	if err != nil {
		return fmt.Errorf("read %s before setting its volume to Retain: %w; the deletes stopped before it", e.Key, err)
	}
	if !doomed {
		// Its delete transaction is sent and skips it; nothing to retain.
		return nil
	}
	for _, v := range r.vols[i] {
		if r.done[v.Key] {
			continue
		}
		res, err := RetainVolume(ctx, r.kube, v)
		if err != nil {
			return fmt.Errorf("%w; the deletes stopped before %s", err, e.Key)
		}
		r.done[v.Key] = true
		r.byEntry[i] = append(r.byEntry[i], res)
		r.journal(res)
	}
	return nil
}

// stillDoomed reports whether the delete of e would go through now: its key
// at the backed-up revision and every key its verdict rests on absent.
func stillDoomed(ctx context.Context, kv clientv3.KV, e backup.Entry) (bool, error) {
	resp, err := kv.Get(ctx, e.Key)
	if err != nil {
		return false, err
	}
	if len(resp.Kvs) == 0 || resp.Kvs[0].ModRevision != e.ModRevision {
		return false, nil
	}
	for _, a := range e.Absent {
		resp, err := kv.Get(ctx, a, clientv3.WithCountOnly())
		if err != nil {
			return false, err
		}
		if resp.Count > 0 {
			return false, nil
		}
	}
	return true, nil
}

// merge returns the results of the deletes with each Retain result just
// before the delete it was done for, and a NotRetained result before the
// first target of each volume left as it was. A volume set to Retain whose
// targets were then all left says so.
func (r *retainer) merge(results []etcdwrite.Result) []etcdwrite.Result {
	deleted := map[string]bool{}
	for i, res := range results {
		if res.Outcome != etcdwrite.Deleted {
			continue
		}
		for _, v := range r.vols[i] {
			deleted[v.Key] = true
		}
	}
	seen := map[string]bool{}
	var out []etcdwrite.Result
	for i, res := range results {
		for _, rr := range r.byEntry[i] {
			if !deleted[rr.Key] {
				rr.Detail += fmt.Sprintf("; then %s was not deleted (%s), so the volume stays Retain", res.Key, res.Outcome)
				r.journal(rr)
			}
			out = append(out, rr)
		}
		for _, v := range r.vols[i] {
			if r.done[v.Key] || seen[v.Key] {
				continue
			}
			seen[v.Key] = true
			nr := etcdwrite.Result{Key: v.Key, Outcome: etcdwrite.NotRetained,
				Detail: fmt.Sprintf("left at reclaim policy %s: %s was not deleted (%s), so its storage is not at stake", v.ReclaimPolicy, res.Key, res.Outcome)}
			r.journal(nr)
			out = append(out, nr)
		}
		out = append(out, res)
	}
	return out
}
