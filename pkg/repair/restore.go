package repair

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/decode"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/plural"
)

// Restore writes back each backed-up key that is absent now; see
// RestoreWith. With dryRun nothing is written.
func Restore(ctx context.Context, kv etcdwrite.KVLease, b *backup.Backup, pacing etcdwrite.Pacing, dryRun bool) ([]etcdwrite.Result, error) {
	return RestoreWith(ctx, kv, b, RestoreOptions{Pacing: pacing, DryRun: dryRun})
}

// RestoreWith writes back each backed-up key that is absent now, with a
// transaction that compares mod_revision == 0 (absent) so that it never
// overwrites a key someone created since. A key already holding the same
// bytes counts as restored before (restore is idempotent); one holding other
// bytes is a conflict and is left alone. A key whose namespace or CRD was
// created again since the purge is refused (see witnessGuard) unless
// o.IntoRecreated; so is a custom resource stored at a version its CRD's
// spec.versions no longer lists, and an APIService whose Service is gone
// (see restoreChecks), with no flag that writes them. The others are
// written with their witnesses (and what restoreChecks judged them on)
// compared in the same transaction. A key that had a lease gets a new one
// with the TTL it had left.
//
// Every key written, and every key left when the writes stop on an error,
// is read back on a context of its own (readBacks); a read-back that fails
// marks that key Unverified and the others are still read. The error is
// returned once every key has an outcome.
func RestoreWith(ctx context.Context, kv etcdwrite.KVLease, b *backup.Backup, o RestoreOptions) ([]etcdwrite.Result, error) {
	results := make([]etcdwrite.Result, len(b.Entries))
	var todo []int
	// expect is the mod revision each write compares its key with: 0
	// (absent), or for a key regghost rewrote and nobody changed since, the
	// revision regghost left it at.
	expect := map[int]int64{}
	for i, e := range b.Entries {
		if e.Role == backup.RoleRetainedVolume {
			results[i] = etcdwrite.Result{Key: e.Key, Outcome: etcdwrite.LeftAsIs, Detail: "the PersistentVolume purge set to Retain is not written back (its original asked for the storage to be deleted)"}
			continue
		}
		resp, err := kv.Get(ctx, e.Key)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", e.Key, err)
		}
		switch {
		case b.Action == backup.ActionMigrate && e.Rewritten == 0:
			// migrate edits a CRD, never deletes it: a key it did not
			// leave as it is now (gone since, or changed by someone else)
			// is not its to put back.
			results[i] = etcdwrite.Result{Key: e.Key, Outcome: etcdwrite.LeftAsIs, Detail: "migrate did not leave it as it is now (gone, changed by someone else since, or never edited); left alone"}
		case len(resp.Kvs) == 0:
			todo = append(todo, i)
			results[i] = etcdwrite.Result{Key: e.Key, Outcome: etcdwrite.WouldRestore}
		case bytes.Equal(resp.Kvs[0].Value, e.Value):
			results[i] = etcdwrite.Result{Key: e.Key, Outcome: etcdwrite.AlreadyPresent, Detail: "already holds the backed-up bytes"}
		case e.Rewritten != 0 && resp.Kvs[0].ModRevision == e.Rewritten:
			// regghost rewrote it, and nobody changed it since.
			todo = append(todo, i)
			expect[i] = e.Rewritten
			results[i] = etcdwrite.Result{Key: e.Key, Outcome: etcdwrite.WouldRestore, Detail: fmt.Sprintf("as regghost left it (mod revision %d): the backed-up bytes go back over it", e.Rewritten)}
		default:
			results[i] = etcdwrite.Result{Key: e.Key, Outcome: etcdwrite.Conflict, Detail: fmt.Sprintf("exists with other content (mod revision %d); left alone", resp.Kvs[0].ModRevision)}
		}
	}
	guard, todo, err := newWitnessGuard(ctx, kv, b, o, todo, results)
	if err != nil {
		return nil, err
	}
	checks, todo, err := newRestoreChecks(ctx, kv, b, o, guard, todo, results)
	if err != nil {
		return nil, err
	}
	todo = checks.last(guard.witnessesFirst(todo))
	if o.DryRun || len(todo) == 0 {
		return results, checkClaims(ctx, kv, b, todo, results, o.Reader)
	}
	into := map[int]string{}
	for _, i := range todo {
		into[i] = results[i].Detail
		results[i] = etcdwrite.Result{Key: b.Entries[i].Key, Outcome: etcdwrite.NotAttempted, Detail: "not attempted: the restore stopped before it"}
	}
	withInto := func(r etcdwrite.Result, i int) etcdwrite.Result {
		if into[i] != "" {
			r.Detail = strings.TrimPrefix(r.Detail+"; ", "; ") + into[i]
		}
		return r
	}
	// The transactions take the shapes the datastore serves (one key at a
	// time on kine: the protected write shapes o.Pacing); a dry run sends
	// none.
	pacing := o.Pacing
	wrote := map[int]int64{}
	// lost marks keys whose put was sent again after an error: the first try
	// may have been applied with its reply lost.
	lost := map[int]bool{}
	// changed says what a key was judged on that changed since: a witness,
	// its CRD's versions, the Service an APIService calls.
	changed := func(ctx context.Context, i int) (string, error) {
		why, err := guard.changed(ctx, kv, i)
		if why != "" || err != nil {
			return why, err
		}
		return checks.changed(ctx, kv, i)
	}
	leases, err := grantLeases(ctx, kv, b, todo)
	if err != nil {
		return results, err
	}
	// Compared on the mod revision: 0 means absent on etcd, and it is the
	// create shape kine serves. The witnesses are compared at the create
	// revision they were judged at; where a transaction takes one compare
	// (kine), they are read just before instead.
	err = etcdwrite.Run(ctx, kv, pacing, etcdwrite.Spec{N: len(todo),
		Cmp: func(j int) []clientv3.Cmp {
			i := todo[j]
			cmps := append([]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(b.Entries[i].Key), "=", expect[i])}, guard.cmps(i)...)
			return append(cmps, checks.cmps(i)...)
		},
		Op: func(j int) clientv3.Op {
			e := b.Entries[todo[j]]
			if id, ok := leases[todo[j]]; ok {
				return clientv3.OpPut(e.Key, string(e.Value), clientv3.WithLease(id))
			}
			return clientv3.OpPut(e.Key, string(e.Value))
		},
		// An update (a rewritten key put back at the revision regghost left
		// it at) has a read as its failure branch: the only update shape
		// kine serves. A create has none, as kine's create shape wants.
		OrElse: func(j int) []clientv3.Op {
			if i := todo[j]; expect[i] != 0 {
				return []clientv3.Op{clientv3.OpGet(b.Entries[i].Key)}
			}
			return nil
		},
		Check: func(ctx context.Context, j int) (bool, error) {
			why, err := changed(ctx, todo[j])
			if why != "" {
				guard.late[todo[j]] = why
			}
			return why == "", err
		},
		Done: func(j int, ok bool, rev int64) {
			i := todo[j]
			checks.done(i, ok)
			switch {
			case ok:
				wrote[i] = rev
				if expect[i] == 0 {
					// Created: keys resting on it compare its new create
					// revision. An update (a rewritten key put back) keeps
					// the create revision read when planning.
					guard.written(i, rev)
				}
				results[i] = withInto(etcdwrite.Result{Key: b.Entries[i].Key, Outcome: etcdwrite.Restored}, i)
				if e := b.Entries[i]; e.Lease != 0 && e.LeaseTTL <= 0 && e.LeaseTTLUnknown != "" {
					results[i].Detail = strings.TrimPrefix(results[i].Detail+"; ", "; ") + fmt.Sprintf("its lease's TTL was unknown at the backup (%s): it got a new lease of %ds, kube-apiserver's default event TTL", e.LeaseTTLUnknown, etcdwrite.UnknownLeaseTTL)
				}
			case guard.late[i] != "":
				results[i] = etcdwrite.Result{Key: b.Entries[i].Key, Outcome: etcdwrite.Refused, Detail: guard.late[i]}
			default:
				results[i] = etcdwrite.Result{Key: b.Entries[i].Key, Outcome: etcdwrite.Conflict, Detail: "created by someone else during the restore; left alone"}
			}
			if o.Journal != nil {
				r := results[i]
				r.Revision = rev
				o.Journal(r)
			}
		},
		Uncertain: func(idx []int) {
			for _, j := range idx {
				lost[todo[j]] = true
			}
		}})
	verr := verifyRestore(ctx, kv, b, changed, todo, results, wrote, lost, withInto)
	if err != nil {
		return results, err
	}
	if verr != nil {
		return results, verr
	}
	return results, checkClaims(ctx, kv, b, todo, results, o.Reader)
}

// verifyRestore reads back every key restore wrote, tried or did not reach:
// a write is reported only once the key holds the backed-up bytes, a failed
// compare says whether the key or one of its witnesses changed, and a key
// left when the writes stopped says whether the transaction in flight wrote
// it. A read-back that fails marks its key Unverified and the others are
// still read; the error says how many could not be read.
func verifyRestore(ctx context.Context, kv clientv3.KV, b *backup.Backup, changed func(context.Context, int) (string, error), todo []int, results []etcdwrite.Result, wrote map[int]int64, lost map[int]bool, withInto func(etcdwrite.Result, int) etcdwrite.Result) error {
	rb := &etcdwrite.ReadBacks{Ctx: ctx}
	var failed []string
	var first error
	fail := func(key string, err error) {
		failed = append(failed, key)
		if first == nil {
			first = fmt.Errorf("%s: %w", key, err)
		}
	}
	for _, i := range todo {
		e := b.Entries[i]
		r := results[i]
		if r.Outcome != etcdwrite.Restored && r.Outcome != etcdwrite.Conflict && r.Outcome != etcdwrite.NotAttempted {
			continue
		}
		resp, err := rb.Get(kv, e.Key)
		if err != nil {
			fail(e.Key, err)
			switch r.Outcome {
			case etcdwrite.Restored:
				results[i] = etcdwrite.Result{Key: e.Key, Outcome: etcdwrite.Unverified, Detail: fmt.Sprintf("written, but reading it back failed (%v): run `regghost restore` again to see", err)}
			case etcdwrite.NotAttempted:
				results[i].Detail = fmt.Sprintf("outcome unknown: the restore stopped and the key could not be read back (%v); run `regghost restore` again to see", err)
			default:
				results[i].Detail += fmt.Sprintf(" (could not be read back: %v)", err)
			}
			continue
		}
		holds := len(resp.Kvs) == 1 && bytes.Equal(resp.Kvs[0].Value, e.Value)
		switch {
		case r.Outcome == etcdwrite.NotAttempted && holds:
			results[i] = withInto(etcdwrite.Result{Key: e.Key, Outcome: etcdwrite.Restored, Detail: "written by the transaction in flight when the restore stopped; read back: the backed-up bytes"}, i)
		case r.Outcome == etcdwrite.NotAttempted && len(resp.Kvs) == 0:
			results[i].Detail = "not attempted: the restore stopped before it; read back: still absent"
		case r.Outcome == etcdwrite.NotAttempted:
			results[i].Detail = fmt.Sprintf("not attempted: the restore stopped before it; read back: present with other bytes (mod revision %d)", resp.Kvs[0].ModRevision)
		case r.Outcome == etcdwrite.Conflict && lost[i] && holds:
			results[i] = withInto(etcdwrite.Result{Key: e.Key, Outcome: etcdwrite.Restored, Detail: "written by a try whose reply was lost (etcd paused); read back: the backed-up bytes"}, i)
		case r.Outcome == etcdwrite.Conflict && len(resp.Kvs) == 0:
			// Still absent: the compare that failed was a witness's, its
			// CRD's or its Service's.
			var why string
			err := rb.Do(func(ctx context.Context) (err error) {
				why, err = changed(ctx, i)
				return err
			})
			if err != nil {
				fail(e.Key, err)
				results[i].Detail = fmt.Sprintf("not written: a compare failed and its witnesses could not be read back (%v); run `regghost restore` again to see", err)
				continue
			}
			if why != "" {
				results[i] = etcdwrite.Result{Key: e.Key, Outcome: etcdwrite.Refused, Detail: why}
			} else {
				results[i].Detail = "not written: it or a key it rests on changed during the restore; left alone"
			}
		case r.Outcome == etcdwrite.Conflict:
		case len(resp.Kvs) == 0:
			results[i] = etcdwrite.Result{Key: e.Key, Outcome: etcdwrite.StillPresent, Detail: "absent again right after the restore"}
		case holds:
		case resp.Kvs[0].CreateRevision == wrote[i]:
			// Written back, then updated: a controller reacting to it.
			results[i].Detail = strings.TrimPrefix(results[i].Detail+"; ", "; ") + fmt.Sprintf("restored, then updated by someone else (now at mod revision %d)", resp.Kvs[0].ModRevision)
		default:
			results[i] = etcdwrite.Result{Key: e.Key, Outcome: etcdwrite.Conflict, Detail: "deleted and created again by someone else right after the restore; left alone"}
		}
	}
	if first == nil {
		return nil
	}
	return fmt.Errorf("verify: %d of %s could not be read back, each marked in its outcome (first %v)", len(failed), plural.Of(len(todo), "key"), first)
}

// checkClaims looks at the volume of every PersistentVolumeClaim restored
// (or to be restored): a claim whose PersistentVolume is gone, or bound to
// another claim, comes back Lost, and says so.
func checkClaims(ctx context.Context, kv clientv3.KV, b *backup.Backup, todo []int, results []etcdwrite.Result, reader ContentReader) error {
	read := func(key string, value []byte) (runtime.Object, error) {
		obj, _, err := decode.Typed(value)
		if err != nil && reader != nil {
			return reader.Read(ctx, key, value)
		}
		return obj, err
	}
	note := func(r *etcdwrite.Result, s string) { r.Detail = strings.TrimPrefix(r.Detail+"; ", "; ") + s }
	for _, i := range todo {
		r := &results[i]
		if r.Outcome != etcdwrite.Restored && r.Outcome != etcdwrite.WouldRestore {
			continue
		}
		e := b.Entries[i]
		if !strings.Contains(e.Key, "/persistentvolumeclaims/") {
			continue
		}
		obj, err := read(e.Key, e.Value)
		if err != nil {
			note(r, "the claim cannot be read here ("+strings.SplitN(err.Error(), "\n", 2)[0]+"): whether its volume binds it again is not known; check it with kubectl once restored")
			continue
		}
		pvc, ok := obj.(*corev1.PersistentVolumeClaim)
		if !ok || pvc.Spec.VolumeName == "" {
			continue
		}
		prefix := b.Prefix
		if prefix == "" {
			prefix = e.Key[:strings.Index(e.Key, "persistentvolumeclaims/")]
		}
		pvKey := prefix + "persistentvolumes/" + pvc.Spec.VolumeName
		resp, err := kv.Get(ctx, pvKey)
		if err != nil {
			return fmt.Errorf("read %s: %w", pvKey, err)
		}
		problem := ""
		if len(resp.Kvs) == 0 {
			problem = "its PersistentVolume " + pvc.Spec.VolumeName + " is gone (no " + pvKey + "): the claim comes back Lost and its data is not there"
		} else if pvObj, err := read(pvKey, resp.Kvs[0].Value); err != nil {
			note(r, "its PersistentVolume "+pvc.Spec.VolumeName+" cannot be read here ("+strings.SplitN(err.Error(), "\n", 2)[0]+"): whether it binds the claim again is not known")
			continue
		} else if pv, ok := pvObj.(*corev1.PersistentVolume); ok && pv.Spec.ClaimRef != nil && pv.Spec.ClaimRef.UID != pvc.UID {
			problem = fmt.Sprintf("its PersistentVolume %s is now bound to claim %s/%s (uid %s): the claim comes back Lost", pv.Name, pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name, pv.Spec.ClaimRef.UID)
		}
		if problem == "" {
			note(r, "PersistentVolume "+pvc.Spec.VolumeName+" is there to bind it again")
			continue
		}
		if r.Outcome == etcdwrite.Restored {
			r.Outcome = etcdwrite.RestoredWithoutVolume
		}
		note(r, problem)
	}
	return nil
}

// maxKeysPerLease is the most keys restore puts under one new lease:
// kube-apiserver's own limit (--lease-max-object-count's 1000), so that
// the lease's expiry never deletes more in one apply than it would.
const maxKeysPerLease = 1000

// grantLeases grants the keys to restore new leases, by entry index: the
// keys of one backed-up lease share new ones, at most maxKeysPerLease a
// lease, each with the shortest TTL its keys had left.
func grantLeases(ctx context.Context, kv etcdwrite.KVLease, b *backup.Backup, todo []int) (map[int]clientv3.LeaseID, error) {
	groups := map[int64][]int{}
	var order []int64
	ttlOf := func(i int) int64 {
		e := b.Entries[i]
		if e.Lease != 0 && e.LeaseTTL <= 0 && e.LeaseTTLUnknown != "" {
			// Its TTL could not be read at the backup: it gets
			// kube-apiserver's default event TTL, so it still expires.
			return etcdwrite.UnknownLeaseTTL
		}
		return e.LeaseTTL
	}
	for _, i := range todo {
		e := b.Entries[i]
		if e.Lease == 0 || ttlOf(i) <= 0 {
			continue
		}
		if _, ok := groups[e.Lease]; !ok {
			order = append(order, e.Lease)
		}
		groups[e.Lease] = append(groups[e.Lease], i)
	}
	out := map[int]clientv3.LeaseID{}
	for _, old := range order {
		keys := groups[old]
		for start := 0; start < len(keys); start += maxKeysPerLease {
			chunk := keys[start:min(start+maxKeysPerLease, len(keys))]
			ttl := ttlOf(chunk[0])
			for _, i := range chunk {
				ttl = min(ttl, ttlOf(i))
			}
			resp, err := kv.Grant(ctx, ttl)
			if err != nil {
				return nil, fmt.Errorf("grant a %ds lease for the keys of lease %x: %w", ttl, old, err)
			}
			for _, i := range chunk {
				out[i] = resp.ID
			}
		}
	}
	return out, nil
}
