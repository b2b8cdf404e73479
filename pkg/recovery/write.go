package recovery

import (
	"context"
	"fmt"
	"strings"

	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/repair"
)

// WriteOptions say how the recovery writes.
type WriteOptions struct {
	// Pacing comes from the protected write: the shapes the datastore
	// serves, and the stop.
	Pacing etcdwrite.Pacing
	// Journal is told each key's outcome as its step returns (the audit
	// log); nil tells nobody.
	Journal func(...etcdwrite.Result)
	// Served waits until the API server serves the custom resources of a
	// CRD just written (it is Established). nil: it cannot be waited for,
	// and the custom resources of a CRD written now are refused.
	Served func(ctx context.Context, crd *Object) error
}

// Write writes the objects whose Action is Recover in the steps WriteOrder
// gives: the namespaces, then the CRDs (waiting until each is served),
// then the rest, owners before what they own; each step is written and
// read back before the next starts. It runs as the write of the protected
// write (see Run), which has recorded the keys first (Entries); each key's
// outcome carries the revision it was written at, which the undo compares.
// Every key is created
// only while absent, with the keys it needs compared at their create
// revision (read just before its step). The results follow the recovered
// objects in the order of objs; objects not recovered get none.
func Write(ctx context.Context, kv etcdwrite.KVLease, objs []*Object, o WriteOptions) ([]etcdwrite.Result, error) {
	var todo []*Object
	index := map[*Object]int{}
	for _, obj := range objs {
		if obj.Action == Recover {
			index[obj] = len(todo)
			todo = append(todo, obj)
		}
	}
	if o.Journal == nil {
		o.Journal = func(...etcdwrite.Result) {}
	}
	b := backup.Backup{Entries: Entries(todo)}
	results := make([]etcdwrite.Result, len(todo))
	for i, obj := range todo {
		results[i] = etcdwrite.Result{Key: obj.Key, Outcome: etcdwrite.NotAttempted, Detail: "not attempted: the recovery stopped before it"}
	}
	// notServed names the CRDs written now whose resources are not served;
	// written holds the create revision of each key written by this run.
	notServed := map[string]string{}
	written := map[string]int64{}
	var werr error
	for _, step := range WriteOrder(todo) {
		together := map[string]bool{}
		for _, obj := range step {
			together[obj.Key] = true
		}
		var idx []int
		var entries []backup.Entry
		for _, obj := range step {
			i := index[obj]
			e := b.Entries[i]
			why := needs(obj, &e, notServed, written, together)
			if why != "" {
				results[i] = etcdwrite.Result{Key: obj.Key, Outcome: etcdwrite.Refused, Detail: why}
				continue
			}
			idx = append(idx, i)
			entries = append(entries, e)
		}
		if len(entries) == 0 {
			continue
		}
		res, err := repair.WriteRecovered(ctx, kv, entries, o.Pacing, o.Journal)
		for j, i := range idx {
			results[i] = res[j]
			b.Entries[i] = entries[j]
			if res[j].Outcome == etcdwrite.Recovered {
				written[entries[j].Key] = entries[j].CreateRevision
			}
			if who, ns := controllerMade(todo[i].Key); res[j].Outcome == etcdwrite.Conflict && who != "" && written[ns] != 0 {
				// The namespace this recovery wrote got its copy from the
				// controller first: the controller's is the one to keep.
				results[i] = etcdwrite.Result{Key: todo[i].Key, Outcome: etcdwrite.LeftAsIs,
					Detail: "made by " + who + " in the namespace this recovery wrote, before the recovery's copy; the controller's is kept"}
				o.Journal(results[i])
			}
		}
		if err != nil {
			werr = err
			break
		}
		if step[0].Stage != StageCRDs {
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
	return results, werr
}

// Entries are the backup entries of the objects a recovery creates, as it
// will write them (the protected write records them before it writes).
func Entries(objs []*Object) []backup.Entry {
	entries := make([]backup.Entry, len(objs))
	for i, obj := range objs {
		entries[i] = backup.Entry{Key: obj.Key, Value: obj.Value, Lease: obj.Lease, Reason: "recovered from revision " + fmt.Sprint(obj.ModRevision) + " of the source"}
	}
	return entries
}

// WriteOrder splits objs into the steps Write takes, in order: the
// namespaces, then the CRDs, then the rest; within a stage an object comes
// in a step after every object of objs it rests on: each owner of its
// ownerReferences that is in objs (the object with that UID, of its
// namespace or cluster-scoped), and each key it Needs. Each step is
// written and read back before the next starts, so that no controller sees
// a dependent before its owner (pods after their ReplicaSet, after its
// Deployment). Objects whose owners form a cycle, and what rests on them,
// are written in one last step of their stage. Within a step objects keep
// the order of objs (key order, from Select). A claim made from a
// StatefulSet's volumeClaimTemplates has no ownerReference (unless its
// retention policy deletes it): it rests on nothing, so it is written in
// the first step of its stage, no later than the StatefulSet (before it in
// key order), and the controller finds it rather than creating an empty
// one.
func WriteOrder(objs []*Object) [][]*Object {
	var steps [][]*Object
	for _, stage := range []Stage{StageNamespaces, StageCRDs, StageObjects} {
		var in []*Object
		for _, o := range objs {
			if o.Stage == stage {
				in = append(in, o)
			}
		}
		steps = append(steps, dependencySteps(in)...)
	}
	return steps
}

// dependencySteps orders the objects of one stage into steps, each object
// after those of objs it rests on (restsOn).
func dependencySteps(objs []*Object) [][]*Object {
	if len(objs) == 0 {
		return nil
	}
	byKey := map[string]int{}
	byUID := map[string][]int{}
	for i, o := range objs {
		byKey[o.Key] = i
		if o.Meta != nil && o.Meta.Meta.UID != "" {
			byUID[string(o.Meta.Meta.UID)] = append(byUID[string(o.Meta.Meta.UID)], i)
		}
	}
	after := make([][]int, len(objs))
	for i, o := range objs {
		after[i] = restsOn(i, o, objs, byKey, byUID)
	}
	placed := make([]bool, len(objs))
	var steps [][]*Object
	for left := len(objs); left > 0; {
		var step []int
		for i := range objs {
			if placed[i] {
				continue
			}
			ready := true
			for _, p := range after[i] {
				ready = ready && placed[p]
			}
			if ready {
				step = append(step, i)
			}
		}
		if len(step) == 0 {
			// A cycle: what is left goes together, in key order.
			for i := range objs {
				if !placed[i] {
					step = append(step, i)
				}
			}
		}
		s := make([]*Object, len(step))
		for j, i := range step {
			s[j] = objs[i]
			placed[i] = true
		}
		left -= len(step)
		steps = append(steps, s)
	}
	return steps
}

// restsOn lists the objects of objs that objs[i] is written after: its
// owners among them (by UID, name and namespace) and the keys it needs.
func restsOn(i int, o *Object, objs []*Object, byKey map[string]int, byUID map[string][]int) []int {
	var out []int
	for _, n := range o.Needs {
		if p, ok := byKey[n.Key]; ok && p != i {
			out = append(out, p)
		}
	}
	if o.Meta == nil {
		return out
	}
	for _, ref := range o.Meta.Meta.OwnerReferences {
		for _, p := range byUID[string(ref.UID)] {
			owner := objs[p]
			if p != i && owner.Parsed.Name == ref.Name && (owner.Parsed.Namespace == "" || owner.Parsed.Namespace == o.Parsed.Namespace) {
				out = append(out, p)
			}
		}
	}
	return out
}

// needs turns the keys obj needs into the compares of its write: a key
// written by this run at the revision it was written, any other at the
// create revision it was judged at (a namespace created again since fails
// the compare). A reason is returned when one was not written or is not
// served. A key written in the same step (owners in a cycle) is not
// compared: its revision is not known yet.
func needs(obj *Object, e *backup.Entry, notServed map[string]string, written map[string]int64, together map[string]bool) string {
	for _, n := range obj.Needs {
		if why := notServed[n.Key]; why != "" {
			return n.What + ": " + why
		}
		rev := n.CreateRevision
		if rev == 0 {
			if together[n.Key] {
				continue
			}
			if rev = written[n.Key]; rev == 0 {
				without := n.Without
				if without == "" {
					without = "the object would be a ghost"
				}
				return fmt.Sprintf("%s was not written by this recovery: %s; not written", n.What, without)
			}
		}
		e.Present = append(e.Present, backup.Present{Key: n.Key, CreateRevision: rev, What: n.What})
	}
	return ""
}

// controllerMade names the controller that creates key's object in every
// new namespace, the same everywhere (kube-controller-manager's
// root-ca-cert-publisher makes kube-root-ca.crt, the cluster's CA), with
// that namespace's key; "" for any other key.
func controllerMade(key string) (who, nsKey string) {
	parts := strings.Split(key, "/")
	if len(parts) < 4 {
		return "", ""
	}
	resource, ns, name := parts[len(parts)-3], parts[len(parts)-2], parts[len(parts)-1]
	prefix := strings.Join(parts[:len(parts)-3], "/") + "/"
	// The default ServiceAccount is not among them: the snapshot's may
	// carry imagePullSecrets or annotations the controller's lacks, a
	// difference to show, never to hide.
	if resource != "configmaps" || name != "kube-root-ca.crt" {
		return "", ""
	}
	who = "kube-controller-manager's root-ca-cert-publisher"
	return who, prefix + "namespaces/" + ns
}
