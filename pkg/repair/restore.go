package repair

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"

	"github.com/regghost/regghost/pkg/decode"
)

// Restore writes back each backed-up key that is absent now, with a
// transaction that compares mod_revision == 0 (absent) so that it never overwrites
// a key someone created since. A key already holding the same bytes counts as
// restored before (restore is idempotent); one holding other bytes is a
// conflict and is left alone. With dryRun nothing is written.
// A key that had a lease gets a new one with the TTL it had left.
func Restore(ctx context.Context, kv KVLease, b *Backup, pacing Pacing, dryRun bool) ([]Result, error) {
	results := make([]Result, len(b.Entries))
	var todo []int
	for i, e := range b.Entries {
		if e.Role == RoleRetainedVolume {
			results[i] = Result{Key: e.Key, Outcome: LeftAsIs, Detail: "the PersistentVolume purge set to Retain is not written back (its original asked for the storage to be deleted)"}
			continue
		}
		resp, err := kv.Get(ctx, e.Key)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", e.Key, err)
		}
		switch {
		case len(resp.Kvs) == 0:
			todo = append(todo, i)
			results[i] = Result{Key: e.Key, Outcome: WouldRestore}
		case bytes.Equal(resp.Kvs[0].Value, e.Value):
			results[i] = Result{Key: e.Key, Outcome: AlreadyPresent, Detail: "already holds the backed-up bytes"}
		default:
			results[i] = Result{Key: e.Key, Outcome: Conflict, Detail: fmt.Sprintf("exists with other content (mod revision %d); left alone", resp.Kvs[0].ModRevision)}
		}
	}
	if dryRun || len(todo) == 0 {
		return results, checkClaims(ctx, kv, b, todo, results)
	}
	for _, i := range todo {
		results[i] = Result{Key: b.Entries[i].Key, Outcome: NotAttempted, Detail: "not attempted: the restore stopped before it"}
	}
	// The transactions take the shapes the datastore serves (one key at a
	// time on kine); a dry run sends none.
	if cli, ok := kv.(*clientv3.Client); ok {
		if ds, err := DetectDatastore(ctx, cli); err == nil {
			pacing = ds.Pacing(pacing)
		}
	}
	wrote := map[int]int64{}
	// lost marks keys whose put was sent again after an error: the first try
	// may have been applied with its reply lost.
	lost := map[int]bool{}
	leases, err := grantLeases(ctx, kv, b, todo)
	if err != nil {
		return results, err
	}
	// Compared on the mod revision: 0 means absent on etcd, and it is the
	// create shape kine serves.
	err = guardedTxn(ctx, kv, pacing, txnSpec{n: len(todo),
		cmp: func(j int) []clientv3.Cmp {
			return []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(b.Entries[todo[j]].Key), "=", 0)}
		},
		op: func(j int) clientv3.Op {
			e := b.Entries[todo[j]]
			if id, ok := leases[e.Lease]; ok {
				return clientv3.OpPut(e.Key, string(e.Value), clientv3.WithLease(id))
			}
			return clientv3.OpPut(e.Key, string(e.Value))
		},
		done: func(j int, ok bool, rev int64) {
			i := todo[j]
			wrote[i] = rev
			results[i] = Result{Key: b.Entries[i].Key, Outcome: Restored}
			if !ok {
				results[i] = Result{Key: b.Entries[i].Key, Outcome: Conflict, Detail: "created by someone else during the restore; left alone"}
			}
		},
		uncertain: func(idx []int) {
			for _, j := range idx {
				lost[todo[j]] = true
			}
		}})
	if err != nil {
		return results, err
	}
	for _, i := range todo {
		if results[i].Outcome == Conflict && lost[i] {
			if resp, err := kv.Get(ctx, b.Entries[i].Key); err == nil && len(resp.Kvs) == 1 && bytes.Equal(resp.Kvs[0].Value, b.Entries[i].Value) {
				results[i] = Result{Key: b.Entries[i].Key, Outcome: Restored, Detail: "written by a try whose reply was lost (etcd paused); read back: the backed-up bytes"}
				wrote[i] = resp.Kvs[0].CreateRevision
			}
		}
		if results[i].Outcome != Restored {
			continue
		}
		resp, err := kv.Get(ctx, b.Entries[i].Key)
		if err != nil {
			return results, fmt.Errorf("verify %s: %w", b.Entries[i].Key, err)
		}
		switch {
		case len(resp.Kvs) == 0:
			results[i] = Result{Key: b.Entries[i].Key, Outcome: StillPresent, Detail: "absent again right after the restore"}
		case bytes.Equal(resp.Kvs[0].Value, b.Entries[i].Value):
		case resp.Kvs[0].CreateRevision == wrote[i]:
			// Written back, then updated: a controller reacting to it.
			results[i].Detail = fmt.Sprintf("restored, then updated by someone else (now at mod revision %d)", resp.Kvs[0].ModRevision)
		default:
			results[i] = Result{Key: b.Entries[i].Key, Outcome: Conflict, Detail: "deleted and created again by someone else right after the restore; left alone"}
		}
	}
	return results, checkClaims(ctx, kv, b, todo, results)
}

// checkClaims looks at the volume of every PersistentVolumeClaim restored
// (or to be restored): a claim whose PersistentVolume is gone, or bound to
// another claim, comes back Lost, and says so.
func checkClaims(ctx context.Context, kv clientv3.KV, b *Backup, todo []int, results []Result) error {
	for _, i := range todo {
		r := &results[i]
		if r.Outcome != Restored && r.Outcome != WouldRestore {
			continue
		}
		e := b.Entries[i]
		obj, _, err := decode.Typed(e.Value)
		pvc, ok := obj.(*corev1.PersistentVolumeClaim)
		if err != nil || !ok || pvc.Spec.VolumeName == "" {
			continue
		}
		prefix := b.Prefix
		if prefix == "" {
			i := strings.Index(e.Key, "persistentvolumeclaims/")
			if i < 0 {
				continue
			}
			prefix = e.Key[:i]
		}
		pvKey := prefix + "persistentvolumes/" + pvc.Spec.VolumeName
		resp, err := kv.Get(ctx, pvKey)
		if err != nil {
			return fmt.Errorf("read %s: %w", pvKey, err)
		}
		problem := ""
		if len(resp.Kvs) == 0 {
			problem = "its PersistentVolume " + pvc.Spec.VolumeName + " is gone (no " + pvKey + "): the claim comes back Lost and its data is not there"
		} else if pvObj, _, err := decode.Typed(resp.Kvs[0].Value); err == nil {
			if pv, ok := pvObj.(*corev1.PersistentVolume); ok && pv.Spec.ClaimRef != nil && pv.Spec.ClaimRef.UID != pvc.UID {
				problem = fmt.Sprintf("its PersistentVolume %s is now bound to claim %s/%s (uid %s): the claim comes back Lost", pv.Name, pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name, pv.Spec.ClaimRef.UID)
			}
		}
		if problem == "" {
			r.Detail = strings.TrimPrefix(r.Detail+"; ", "; ") + "PersistentVolume " + pvc.Spec.VolumeName + " is there to bind it again"
			continue
		}
		if r.Outcome == Restored {
			r.Outcome = RestoredWithoutVolume
		}
		r.Detail = strings.TrimPrefix(r.Detail+"; ", "; ") + problem
	}
	return nil
}

// KVLease is what a repair needs of etcd: keys and leases (*clientv3.Client).
type KVLease interface {
	clientv3.KV
	clientv3.Lease
}

// grantLeases grants one new lease per backed-up lease of the keys to
// restore, with the shortest TTL its keys had left.
func grantLeases(ctx context.Context, kv KVLease, b *Backup, todo []int) (map[int64]clientv3.LeaseID, error) {
	ttls := map[int64]int64{}
	for _, i := range todo {
		e := b.Entries[i]
		if e.Lease == 0 || e.LeaseTTL <= 0 {
			continue
		}
		if t, ok := ttls[e.Lease]; !ok || e.LeaseTTL < t {
			ttls[e.Lease] = e.LeaseTTL
		}
	}
	out := map[int64]clientv3.LeaseID{}
	for old, ttl := range ttls {
		resp, err := kv.Grant(ctx, ttl)
		if err != nil {
			return nil, fmt.Errorf("grant a %ds lease for the keys of lease %x: %w", ttl, old, err)
		}
		out[old] = resp.ID
	}
	return out, nil
}
