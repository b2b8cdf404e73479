package repair

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/catalog"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/plural"
)

// WriteRecovered creates each entry's key only while it is absent, with its
// Present witnesses compared at their create revision in the same
// transaction: nothing is ever overwritten and nothing is written into a
// namespace or CRD deleted (or deleted and created again) meanwhile. A key
// whose entry has a lease gets a new one of UnknownLeaseTTL (the source's
// lease does not exist here). Every key is read back. entries[i].ModRevision
// is set to the revision that wrote it.
//
// journal, when set, is told each key's outcome as its transaction returns,
// with the revision it was written at, and again when the read-back changes
// what it says: the audit log the undo reads.
func WriteRecovered(ctx context.Context, kv etcdwrite.KVLease, entries []backup.Entry, pacing etcdwrite.Pacing, journal func(...etcdwrite.Result)) ([]etcdwrite.Result, error) {
	if journal == nil {
		journal = func(...etcdwrite.Result) {}
	}
	results := make([]etcdwrite.Result, len(entries))
	for i, e := range entries {
		results[i] = etcdwrite.Result{Key: e.Key, Outcome: etcdwrite.NotAttempted, Detail: "not attempted: the recovery stopped before it"}
	}
	var lease clientv3.LeaseID
	for _, e := range entries {
		if e.Lease != 0 {
			resp, err := kv.Grant(ctx, etcdwrite.UnknownLeaseTTL)
			if err != nil {
				return results, fmt.Errorf("grant a %ds lease for the recovered keys that had one: %w", etcdwrite.UnknownLeaseTTL, err)
			}
			lease = resp.ID
			break
		}
	}
	lost := map[int]bool{}
	witnessGone := func(ctx context.Context, i int) (string, error) {
		for _, w := range entries[i].Present {
			resp, err := kv.Get(ctx, w.Key)
			if err != nil {
				return "", fmt.Errorf("read %s: %w", w.Key, err)
			}
			if len(resp.Kvs) == 0 {
				return fmt.Sprintf("%s was deleted meanwhile: the object would be a ghost; not written", w.What), nil
			}
			if resp.Kvs[0].CreateRevision != w.CreateRevision {
				return fmt.Sprintf("%s was deleted and created again meanwhile; not written", w.What), nil
			}
		}
		return "", nil
	}
	late := map[int]string{}
	err := etcdwrite.Run(ctx, kv, pacing, etcdwrite.Spec{N: len(entries),
		Cmp: func(i int) []clientv3.Cmp {
			cmps := []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(entries[i].Key), "=", 0)}
			for _, w := range entries[i].Present {
				cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(w.Key), "=", w.CreateRevision))
			}
			return cmps
		},
		Op: func(i int) clientv3.Op {
			e := entries[i]
			if e.Lease != 0 && lease != 0 {
				return clientv3.OpPut(e.Key, string(e.Value), clientv3.WithLease(lease))
			}
			return clientv3.OpPut(e.Key, string(e.Value))
		},
		Check: func(ctx context.Context, i int) (bool, error) {
			why, err := witnessGone(ctx, i)
			if why != "" {
				late[i] = why
			}
			return why == "", err
		},
		Done: func(i int, ok bool, rev int64) {
			switch {
			case ok:
				entries[i].ModRevision, entries[i].CreateRevision, entries[i].Version = rev, rev, 1
				results[i] = etcdwrite.Result{Key: entries[i].Key, Outcome: etcdwrite.Recovered, Revision: rev}
				if entries[i].Lease != 0 {
					results[i].Detail = fmt.Sprintf("with a new lease of %ds (kube-apiserver's default event TTL)", etcdwrite.UnknownLeaseTTL)
				}
			case late[i] != "":
				results[i] = etcdwrite.Result{Key: entries[i].Key, Outcome: etcdwrite.Refused, Detail: late[i]}
			default:
				results[i] = etcdwrite.Result{Key: entries[i].Key, Outcome: etcdwrite.Conflict, Detail: "created by someone else, or its namespace or CRD changed, during the recovery; left alone"}
			}
			journal(results[i])
		},
		Uncertain: func(idx []int) {
			for _, i := range idx {
				lost[i] = true
			}
		}})
	before := append([]etcdwrite.Result{}, results...)
	verr := verifyRecovered(ctx, kv, entries, results, lost, witnessGone)
	for i := range results {
		if results[i] != before[i] {
			journal(results[i])
		}
	}
	if err != nil {
		return results, err
	}
	return results, verr
}

// verifyRecovered reads every key back, each on a context of its own.
func verifyRecovered(ctx context.Context, kv clientv3.KV, entries []backup.Entry, results []etcdwrite.Result, lost map[int]bool, witnessGone func(context.Context, int) (string, error)) error {
	rb := &etcdwrite.ReadBacks{Ctx: ctx}
	var first error
	failed := 0
	for i, e := range entries {
		r := results[i]
		if r.Outcome == etcdwrite.Refused {
			continue
		}
		resp, err := rb.Get(kv, e.Key)
		if err != nil {
			failed++
			if first == nil {
				first = fmt.Errorf("%s: %w", e.Key, err)
			}
			// A write whose read-back failed keeps the revision it was
			// written at: the undo still knows it.
			results[i] = etcdwrite.Result{Key: e.Key, Outcome: etcdwrite.Unverified, Revision: r.Revision, Detail: fmt.Sprintf("%s; reading it back failed (%v): run the recovery again to see", r.Outcome, err)}
			continue
		}
		holds := len(resp.Kvs) == 1 && bytes.Equal(resp.Kvs[0].Value, e.Value)
		switch {
		case r.Outcome == etcdwrite.Recovered && holds:
		case r.Outcome == etcdwrite.Recovered && len(resp.Kvs) == 0:
			results[i] = etcdwrite.Result{Key: e.Key, Outcome: etcdwrite.StillPresent, Detail: "written, and absent again right after the recovery (deleted by a controller?)"}
		case r.Outcome == etcdwrite.Recovered && resp.Kvs[0].CreateRevision == e.CreateRevision:
			results[i].Detail = strings.TrimPrefix(results[i].Detail+"; ", "; ") + fmt.Sprintf("recovered, then updated by someone else (now at mod revision %d)", resp.Kvs[0].ModRevision)
		case r.Outcome == etcdwrite.Recovered:
			results[i] = etcdwrite.Result{Key: e.Key, Outcome: etcdwrite.Conflict, Detail: "deleted and created again by someone else right after the recovery; left alone"}
		case holds && (r.Outcome == etcdwrite.NotAttempted || lost[i]):
			// Written by the transaction in flight, or by a try whose reply
			// was lost.
			entries[i].ModRevision, entries[i].CreateRevision, entries[i].Version = resp.Kvs[0].ModRevision, resp.Kvs[0].CreateRevision, resp.Kvs[0].Version
			results[i] = etcdwrite.Result{Key: e.Key, Outcome: etcdwrite.Recovered, Revision: resp.Kvs[0].ModRevision, Detail: "written by a transaction whose reply was lost or that was in flight at the stop; read back: the snapshot's bytes"}
		case r.Outcome == etcdwrite.Conflict && holds:
			// Its compare failed, yet it holds exactly the snapshot's bytes
			// (with encryption at rest, no one but a copy of the snapshot
			// writes those): it was there already. Not this run's write:
			// its undo leaves it.
			results[i] = etcdwrite.Result{Key: e.Key, Outcome: etcdwrite.AlreadyPresent, Detail: fmt.Sprintf("already there, byte-identical to the snapshot (create revision %d): not written by this recovery; left as it is", resp.Kvs[0].CreateRevision)}
		case r.Outcome == etcdwrite.Conflict && len(resp.Kvs) == 0:
			var why string
			if err := rb.Do(func(ctx context.Context) (err error) { why, err = witnessGone(ctx, i); return err }); err == nil && why != "" {
				results[i] = etcdwrite.Result{Key: e.Key, Outcome: etcdwrite.Refused, Detail: why}
			}
		}
	}
	if first == nil {
		return nil
	}
	return fmt.Errorf("verify: %d of %s could not be read back, each marked in its outcome (first %v)", failed, plural.Of(len(entries), "key"), first)
}

// UndoRecover deletes the keys a recovery created (b.Action ActionRecover),
// newest first, and only those the record says it wrote: the revision each
// was written at, from the recovery's audit log in dir (or, in a backup
// written before the log recorded revisions, the backup entry's). A key
// with no such record was not written by that run (refused, not attempted,
// or left for a second run) and is left alone, whatever it holds now; a
// key is deleted only while it is still at the revision the recovery wrote
// it at (compared in the transaction), so a change made since, or a second
// run's write, is never undone. A recovered namespace or CRD goes last,
// and only when nothing is left in it once the recovery's other keys are
// deleted (counted again right before): deleting it under any other
// object, a key of the recovery left alone included, would make a ghost.
// With dryRun nothing is deleted.
//
// journal, when set, is told each key's outcome as its transaction returns.
func UndoRecover(ctx context.Context, kv clientv3.KV, b *backup.Backup, dir string, dryRun bool, pacing etcdwrite.Pacing, journal func(etcdwrite.Result)) ([]etcdwrite.Result, error) {
	if b.Action != backup.ActionRecover {
		return nil, fmt.Errorf("backup of scope %q is not a recovery's", b.Scope)
	}
	written, err := backup.Written(dir, backup.ActionRecover, etcdwrite.Recovered, etcdwrite.Unverified)
	if err != nil {
		return nil, err
	}
	var results []etcdwrite.Result
	var todo, containers []backup.Entry
	for i := len(b.Entries) - 1; i >= 0; i-- {
		e := b.Entries[i]
		rev := written[e.Key]
		if rev == 0 {
			rev = e.ModRevision
		}
		if rev == 0 {
			results = append(results, etcdwrite.Result{Key: e.Key, Outcome: etcdwrite.LeftAsIs, Detail: "the recovery did not write it (no record of a write in its audit log); left alone"})
			continue
		}
		resp, err := kv.Get(ctx, e.Key)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", e.Key, err)
		}
		switch {
		case len(resp.Kvs) == 0:
			results = append(results, etcdwrite.Result{Key: e.Key, Outcome: etcdwrite.SkippedGone, Detail: "already absent"})
			continue
		case resp.Kvs[0].ModRevision != rev || !bytes.Equal(resp.Kvs[0].Value, e.Value):
			results = append(results, etcdwrite.Result{Key: e.Key, Outcome: etcdwrite.SkippedChanged, Detail: fmt.Sprintf("changed since the recovery wrote it at revision %d (now at mod revision %d); left alone", rev, resp.Kvs[0].ModRevision)})
			continue
		}
		e.ModRevision = rev
		if inside, _ := containerOf(b.Prefix, e.Key); inside != nil {
			containers = append(containers, e)
		} else {
			todo = append(todo, e)
		}
		results = append(results, etcdwrite.Result{Key: e.Key, Outcome: etcdwrite.WouldDelete})
	}
	set := func(rs []etcdwrite.Result) {
		byKey := map[string]etcdwrite.Result{}
		for _, r := range rs {
			byKey[r.Key] = r
		}
		for i, r := range results {
			if d, ok := byKey[r.Key]; ok {
				results[i] = d
			}
		}
	}
	// gone are the keys deleted before the containers are counted.
	gone := map[string]bool{}
	if dryRun {
		for _, e := range todo {
			gone[e.Key] = true
		}
	} else if len(todo) > 0 {
		deleted, err := GuardedDelete(ctx, kv, todo, pacing, journal)
		set(deleted)
		if err != nil {
			return results, err
		}
	}
	if len(containers) == 0 {
		return results, nil
	}
	others, err := countOthers(ctx, kv, b.Prefix, gone)
	if err != nil {
		return results, err
	}
	var empty []backup.Entry
	var refusedNow []etcdwrite.Result
	for _, e := range containers {
		inside, what := containerOf(b.Prefix, e.Key)
		if n := others[inside(e.Key)]; n > 0 {
			refusedNow = append(refusedNow, etcdwrite.Result{Key: e.Key, Outcome: etcdwrite.Refused, Detail: fmt.Sprintf("%s still in this %s (not the recovery's, or left alone above): deleting it would make %s; left alone", plural.Verb(n, "object", "is", "are"), what, plural.Pick(n, "it a ghost", "them ghosts"))})
			continue
		}
		empty = append(empty, e)
	}
	set(refusedNow)
	if dryRun || len(empty) == 0 {
		return results, nil
	}
	deleted, err := GuardedDelete(ctx, kv, empty, pacing, journal)
	set(deleted)
	return results, err
}

// containerOf says whether key is a namespace or a CRD, and how the
// objects in it are named: the namespace, or the CRD's storage prefix.
func containerOf(registry, key string) (func(string) string, string) {
	rest := strings.TrimPrefix(key, registry)
	switch {
	case strings.HasPrefix(rest, "namespaces/"):
		return func(k string) string {
			return "ns:" + strings.TrimPrefix(strings.TrimPrefix(k, registry), "namespaces/")
		}, "namespace"
	case strings.HasPrefix(rest, "apiextensions.k8s.io/customresourcedefinitions/"):
		return func(k string) string {
			name := strings.TrimPrefix(strings.TrimPrefix(k, registry), "apiextensions.k8s.io/customresourcedefinitions/")
			plural, group, _ := strings.Cut(name, ".")
			return "crd:" + group + "/" + plural
		}, "CustomResourceDefinition"
	}
	return nil, ""
}

// countOthers counts the keys under registry that are not ours, by
// namespace ("ns:<name>") and by custom resource prefix ("crd:<group>/<plural>").
func countOthers(ctx context.Context, kv clientv3.KV, registry string, ours map[string]bool) (map[string]int, error) {
	counts := map[string]int{}
	start, end := registry, clientv3.GetPrefixRangeEnd(registry)
	for {
		resp, err := kv.Get(ctx, start, clientv3.WithRange(end), clientv3.WithKeysOnly(), clientv3.WithLimit(10000))
		if err != nil {
			return nil, fmt.Errorf("list keys under %s: %w", registry, err)
		}
		for _, k := range resp.Kvs {
			key := string(k.Key)
			if ours[key] {
				continue
			}
			segs := strings.Split(strings.TrimPrefix(key, registry), "/")
			n := catalog.PrefixSegments(segs[0])
			if len(segs) == n+2 {
				counts["ns:"+segs[n]]++
			}
			if n == 2 && strings.Contains(segs[0], ".") && len(segs) > n {
				counts["crd:"+segs[0]+"/"+segs[1]]++
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return counts, nil
		}
		start = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}
