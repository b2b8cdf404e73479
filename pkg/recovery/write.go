package recovery

import (
	"context"
	"fmt"

	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/repair"
)

// WriteOptions say where the recovery's backup goes and how it writes.
type WriteOptions struct {
	// Dir is the (new, empty) backup directory.
	Dir string
	// Header is the backup's scope, endpoint, cluster ID and the live
	// revision the objects were judged at.
	Header backup.Backup
	Pacing etcdwrite.Pacing
	// Served waits until the API server serves the custom resources of a
	// CRD just written (it is Established). nil: it cannot be waited for,
	// and the custom resources of a CRD written now are refused.
	Served func(ctx context.Context, crd *Object) error
}

// Write writes the objects whose Action is Recover, stage by stage: the
// namespaces, then the CRDs (waiting until each is served), then the rest.
// A verified backup of what it is about to write goes first (restore
// deletes those keys again), and is written again with the revisions once
// the keys are written. Every key is created only while absent, with the
// keys it needs compared at their create revision (read just before its
// stage). The results follow objs; objects not recovered get none.
func Write(ctx context.Context, kv etcdwrite.KVLease, objs []*Object, o WriteOptions) ([]etcdwrite.Result, string, error) {
	var todo []*Object
	for _, obj := range objs {
		if obj.Action == Recover {
			todo = append(todo, obj)
		}
	}
	b := o.Header
	b.Action = backup.ActionRecover
	b.Entries = make([]backup.Entry, len(todo))
	for i, obj := range todo {
		b.Entries[i] = backup.Entry{Key: obj.Key, Value: obj.Value, Lease: obj.Lease, Reason: "recovered from revision " + fmt.Sprint(obj.ModRevision) + " of the source"}
	}
	path, _, err := backup.WriteBackup(o.Dir, &b)
	if err != nil {
		return nil, "", fmt.Errorf("write the recovery's backup before writing anything: %w", err)
	}
	results := make([]etcdwrite.Result, len(todo))
	for i, obj := range todo {
		results[i] = etcdwrite.Result{Key: obj.Key, Outcome: etcdwrite.NotAttempted, Detail: "not attempted: the recovery stopped before it"}
	}
	// notServed names the CRDs written now whose resources are not served;
	// written holds the create revision of each key written by this run.
	notServed := map[string]string{}
	written := map[string]int64{}
	var werr error
	for _, stage := range []Stage{StageNamespaces, StageCRDs, StageObjects} {
		var idx []int
		var entries []backup.Entry
		for i, obj := range todo {
			if obj.Stage != stage {
				continue
			}
			e := b.Entries[i]
			why := needs(obj, &e, notServed, written)
			if why != "" {
				results[i] = etcdwrite.Result{Key: obj.Key, Outcome: etcdwrite.Refused, Detail: why}
				continue
			}
			idx = append(idx, i)
			entries = append(entries, e)
		}
		if werr != nil {
			break
		}
		if len(entries) == 0 {
			continue
		}
		res, err := repair.WriteRecovered(ctx, kv, entries, o.Pacing)
		for j, i := range idx {
			results[i] = res[j]
			b.Entries[i] = entries[j]
			if res[j].Outcome == etcdwrite.Recovered {
				written[entries[j].Key] = entries[j].CreateRevision
			}
		}
		if err != nil {
			werr = err
			break
		}
		if stage != StageCRDs {
			continue
		}
		for j, i := range idx {
			if res[j].Outcome != etcdwrite.Recovered {
				continue
			}
			switch {
			case o.Served == nil:
				notServed[todo[i].Key] = "the API server is not asked, so whether it serves the CRD cannot be waited for; run the recovery again once it does"
			default:
				if err := o.Served(ctx, todo[i]); err != nil {
					notServed[todo[i].Key] = fmt.Sprintf("the CRD was written but is not served yet (%v); run the recovery again once it is", err)
				}
			}
		}
	}
	// The revisions each key was written at, for the undo.
	if _, _, err := backup.WriteBackup(o.Dir, &b); err != nil && werr == nil {
		werr = fmt.Errorf("record the written revisions in the backup (the backup written before still undoes the recovery): %w", err)
	}
	return results, path, werr
}

// needs turns the keys obj needs into the compares of its write: a key
// written by this run at the revision it was written, any other at the
// create revision it was judged at (a namespace created again since fails
// the compare). A reason is returned when one was not written or is not
// served.
func needs(obj *Object, e *backup.Entry, notServed map[string]string, written map[string]int64) string {
	for _, n := range obj.Needs {
		if why := notServed[n.Key]; why != "" {
			return n.What + ": " + why
		}
		rev := n.CreateRevision
		if rev == 0 {
			if rev = written[n.Key]; rev == 0 {
				return fmt.Sprintf("%s was not written by this recovery: the object would be a ghost; not written", n.What)
			}
		}
		e.Present = append(e.Present, backup.Present{Key: n.Key, CreateRevision: rev, What: n.What})
	}
	return ""
}
