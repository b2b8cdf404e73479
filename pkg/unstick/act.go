package unstick

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/catalog"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/notice"
	"github.com/regghost/regghost/pkg/protect"
)

// ErrRefused is returned (wrapped) when unstick must not act.
var ErrRefused = errors.New("refused")

// Options configure Run.
type Options struct {
	// Client reads the keys to back up, and watches the deletion finish.
	Client *clientv3.Client
	// Dynamic patches through the API server.
	Dynamic    dynamic.Interface
	BackupRoot string
	// Wait bounds how long Run waits for the deletion to finish.
	Wait time.Duration
	Now  func() time.Time
	// Notices gets the lock's lines; Decrypt opens an encrypted
	// kube-system namespace (the cluster's identity).
	Notices notice.Func
	Decrypt backup.Decrypter
	// Analyze analyses the target again, against etcd and the API server
	// as they are now: Run does it under the lock and stops when a
	// finalizer it would remove is served again (its controller is back)
	// or a blocker changed. nil: only each blocker's revision is compared.
	Analyze func(ctx context.Context) (*Analysis, error)
}

// Result is what Run did.
type Result struct {
	Dir    string `json:"dir"`
	Backup string `json:"backup"`
	// Dirs are every backup directory the run made, in order (Resolve makes
	// one for the APIServices it deletes and one for the finalizers it
	// removes after); each is restored on its own.
	Dirs    []string           `json:"dirs"`
	Results []etcdwrite.Result `json:"results"`
	// Finished is set when the target's key is gone.
	Finished bool `json:"finished"`
	// Recreated is set when the namespace was deleted and created again
	// (another UID) before the nudge: the one reviewed is gone, and nothing
	// was done to the new one.
	Recreated bool `json:"recreated,omitempty"`
	// Left counts the keys of it still in etcd afterwards.
	Left int `json:"left"`
}

// Run removes the blockers' finalizers through the API server, in the
// protected write (protect.Run): the lock, a verified per-key backup of
// every key it touches at the reviewed revision (one changed since stops
// the run; restore puts them back), then one patch per object
// preconditioned on the reviewed resourceVersion; then it waits for the
// deletion to finish and counts what is left in etcd.
func Run(ctx context.Context, a *Analysis, registry string, o Options) (*Result, error) {
	if a.Refusal != "" {
		return nil, fmt.Errorf("%w: %s; nothing was changed", ErrRefused, a.Refusal)
	}
	if a.removable() == 0 {
		return nil, fmt.Errorf("%w: no object holds %s with finalizers nobody serves; nothing was changed", ErrRefused, a.Target)
	}
	if o.Dynamic == nil {
		return nil, fmt.Errorf("%w: unstick works through the API server, which cannot be reached; nothing was changed", ErrRefused)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	var wants []protect.Want
	seen := map[string]bool{}
	for _, b := range a.Blockers {
		if len(b.Remove) == 0 || seen[b.Key] {
			continue
		}
		seen[b.Key] = true
		wants = append(wants, protect.Want{ModRevision: b.ModRevision, Required: true, Entry: backup.Entry{Key: b.Key,
			Reason: "finalizers [" + strings.Join(b.Finalizers, ", ") + "] removed by regghost unstick " + a.Target}})
	}
	res := &Result{}
	removed := 0
	out, err := protect.Run(ctx, protect.Job{Client: o.Client, Holder: "regghost unstick " + a.Target, Notices: o.Notices,
		Prefix: registry, Decrypt: o.Decrypt, Action: backup.ActionUnstick,
		Rejudge: func(ctx context.Context) error { return rejudge(ctx, a, o.Analyze) },
		Backup:  &protect.Record{Root: o.BackupRoot, Scope: "unstick " + a.Target, Action: backup.ActionUnstick, Keys: wants, Now: o.Now},
		Write: func(ctx context.Context, w *protect.Writer) ([]etcdwrite.Result, error) {
			var results []etcdwrite.Result
			wrote := map[string]int64{}
			for _, b := range a.Blockers {
				if len(b.Remove) == 0 {
					continue
				}
				// A stop (a signal, or an audit log that can no longer be
				// written) is honoured between patches.
				if stopped(w.Pacing.Stop) {
					r := etcdwrite.Result{Key: b.Key, Outcome: etcdwrite.NotAttempted, Detail: "not attempted: the run stopped before it"}
					w.Journal(r)
					results = append(results, r)
					continue
				}
				// An object with custom finalizers in both lists (a
				// namespace's metadata and spec) is written twice: the
				// second write's precondition is the revision the first
				// left it at, our own write, not a change by someone else.
				if rev, ok := wrote[b.Key]; ok {
					b.ModRevision = rev
				}
				r := removeFinalizers(ctx, o.Dynamic, b)
				if r.Outcome == etcdwrite.FinalizersRemoved {
					removed++
					wrote[b.Key] = r.Revision
				} else if r.Outcome == etcdwrite.NotAttempted {
					// A 404 for a key etcd holds is not "gone". Read back on
					// a context of its own: the command's may have run out.
					rctx, cancel := etcdwrite.ReadBackContext(ctx)
					resp, err := o.Client.Get(rctx, b.Key, clientv3.WithCountOnly())
					cancel()
					switch {
					case err != nil:
						r.Outcome, r.Detail = etcdwrite.PatchFailed, fmt.Sprintf("%s, and etcd could not be read back (%v): whether it is gone is unknown", r.Detail, err)
					case resp.Count == 0:
						r.Outcome, r.Detail = etcdwrite.SkippedGone, "gone since it was reviewed"
					default:
						r.Outcome, r.Detail = etcdwrite.PatchFailed, r.Detail+" for a key etcd still holds"
					}
				}
				w.Journal(r)
				results = append(results, r)
			}
			return results, nil
		}})
	if out == nil {
		if errors.Is(err, etcdwrite.ErrLocked) || errors.Is(err, protect.ErrNothingChanged) {
			return nil, fmt.Errorf("%w: %w", ErrRefused, err)
		}
		return nil, err
	}
	res.Dir, res.Backup, res.Results, res.Dirs = out.Dir, out.Backup, out.Results, []string{out.Dir}
	if err != nil {
		return res, err
	}
	if removed > 0 {
		res.Finished = waitGone(ctx, o.Client, a.Key, o.Wait)
	}
	// Count with a context of its own: the wait may have used up the command's.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	left, err := countLeft(cctx, o.Client, registry, a)
	if err != nil {
		return res, err
	}
	res.Left = left
	return res, nil
}

// removeFinalizers removes a blocker's unserved finalizers through the API
// server, keeping the others, preconditioned on the reviewed
// resourceVersion. A namespace's spec.finalizers go through its finalize
// subresource.
func removeFinalizers(ctx context.Context, dyn dynamic.Interface, b Blocker) etcdwrite.Result {
	gvr := schema.GroupVersionResource{Group: b.Resource.Group, Version: b.Resource.Version, Resource: b.Resource.Resource}
	rc := dyn.Resource(gvr)
	var ri dynamic.ResourceInterface = rc
	if b.Namespace != "" {
		ri = rc.Namespace(b.Namespace)
	}
	keep := b.Keep
	if keep == nil {
		keep = []string{}
	}
	rv := fmt.Sprint(b.ModRevision)
	var err error
	var after *unstructured.Unstructured
	if b.Spec {
		var obj *unstructured.Unstructured
		if obj, err = ri.Get(ctx, b.Name, metav1.GetOptions{}); err == nil {
			if obj.GetResourceVersion() != rv {
				return etcdwrite.Result{Key: b.Key, Outcome: etcdwrite.SkippedChanged, Detail: "changed since it was reviewed; left alone"}
			}
			spec := make([]interface{}, len(keep))
			for i, f := range keep {
				spec[i] = f
			}
			if err = unstructured.SetNestedSlice(obj.Object, spec, "spec", "finalizers"); err == nil {
				after, err = ri.Update(ctx, obj, metav1.UpdateOptions{}, "finalize")
			}
		}
	} else {
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": keep, "resourceVersion": rv}})
		after, err = ri.Patch(ctx, b.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	}
	where := ""
	if b.Spec {
		where = " from spec.finalizers"
	}
	switch {
	case err == nil:
		// The revision the patch left the object at is journaled: restore
		// puts the finalizers back only while the object is still at it.
		left, _ := strconv.ParseInt(after.GetResourceVersion(), 10, 64)
		return etcdwrite.Result{Key: b.Key, Outcome: etcdwrite.FinalizersRemoved, Revision: left,
			Detail: fmt.Sprintf("[%s] removed%s through the API server (resourceVersion %d)", strings.Join(b.Remove, ", "), where, b.ModRevision)}
	case apierrors.IsConflict(err):
		return etcdwrite.Result{Key: b.Key, Outcome: etcdwrite.SkippedChanged, Detail: "changed since it was reviewed; left alone"}
	case apierrors.IsNotFound(err):
		return etcdwrite.Result{Key: b.Key, Outcome: etcdwrite.NotAttempted, Detail: "404 from the API server"}
	}
	return etcdwrite.Result{Key: b.Key, Outcome: etcdwrite.PatchFailed, Detail: "the API server refused the patch: " + err.Error()}
}

// waitGone waits until key is gone from etcd, at most wait. When the wait
// or ctx is over, the key is read once more on a context of its own, so a
// deletion that finished as the time ran out is still seen.
func waitGone(ctx context.Context, cli *clientv3.Client, key string, wait time.Duration) bool {
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		resp, err := cli.Get(ctx, key, clientv3.WithCountOnly())
		if err == nil && resp.Count == 0 {
			return true
		}
		time.Sleep(500 * time.Millisecond)
	}
	rctx, cancel := etcdwrite.ReadBackContext(ctx)
	defer cancel()
	resp, err := cli.Get(rctx, key, clientv3.WithCountOnly())
	return err == nil && resp.Count == 0
}

// countLeft counts the keys of the target still in etcd.
func countLeft(ctx context.Context, cli *clientv3.Client, registry string, a *Analysis) (int, error) {
	store, err := etcdscan.NewEtcdStore(ctx, cli, etcdscan.DefaultPageSize)
	if err != nil {
		return 0, err
	}
	n := 0
	count := func(*mvccpb.KeyValue) error { n++; return nil }
	if name, ok := strings.CutPrefix(a.Target, "namespace "); ok {
		err = etcdscan.WalkNamespace(ctx, store, registry, name, true, count)
	} else {
		r, _ := catalog.CustomFromCRDName(strings.TrimPrefix(a.Target, "customresourcedefinition "))
		prefix := registry + r.Prefix() + "/"
		err = store.Range(ctx, prefix, etcdscan.PrefixEnd(prefix), true, count)
	}
	return n, err
}

// Wait waits (at most wait) for the target to be gone after something else
// unblocked it (a dangling APIService deleted), and counts what is left.
func Wait(ctx context.Context, a *Analysis, registry string, cli *clientv3.Client, wait time.Duration) (finished bool, left int, err error) {
	finished = waitGone(ctx, cli, a.Key, wait)
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	left, err = countLeft(cctx, cli, registry, a)
	return finished, left, err
}

// NudgeAnnotation is what Nudge writes on a namespace.
const NudgeAnnotation = "regghost.io/unblocked-at"

// Nudged is the outcome of a nudge written: the namespace was annotated.
// It is not a change restore puts back (the annotation only wakes the
// namespace controller), so a backup's audit log that records it still
// counts as recording no change to undo.
const Nudged etcdwrite.Outcome = "nudged"

// ErrRecreated is returned (wrapped) when the namespace the plan read was
// deleted and created again under its name (another UID) before unstick
// wrote to it: the one reviewed is gone, and the new one is left alone.
var ErrRecreated = errors.New("deleted and created again since it was reviewed")

// namespacesResource is the API resource a nudge patches.
var namespacesResource = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// Nudge writes the plan's nudge (a.Nudge; nothing when it has none): it
// tells the namespace controller to look at the namespace again once what
// held it (a dangling APIService) is gone, since after many failed tries
// its retry waits minutes, while an update of the namespace is looked at
// within seconds. A CRD needs none (kube-apiserver's own controller
// watches it).
//
// It is a protected write (protect.Run: the writers' lock) whose outcome is
// journaled, as unstick's, to the audit log in dir (the APIServices'
// backup, which the annotation needs nothing of: restore has nothing to put
// back for it). The namespace is read through the API server first and
// annotated only while it is the one the plan read (its UID), with the UID
// in the patch too, so the API server refuses it for a namespace created
// again meanwhile. A namespace created again is not annotated: the result
// says so, and the error wraps ErrRecreated; one gone already (its deletion
// finished) is no error. The result is nil when nothing was attempted.
func Nudge(ctx context.Context, a *Analysis, registry, dir string, o Options) (*etcdwrite.Result, error) {
	n := a.Nudge
	if n == nil {
		return nil, nil
	}
	if o.Dynamic == nil {
		return nil, fmt.Errorf("annotate %s %s: the API server cannot be reached; not annotated", a.Target, n.Annotation)
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	out, err := protect.Run(ctx, protect.Job{Client: o.Client, Holder: "regghost unstick " + a.Target, Notices: o.Notices,
		Prefix: registry, Decrypt: o.Decrypt, Action: backup.ActionUnstick, AuditDir: dir,
		Write: func(ctx context.Context, w *protect.Writer) ([]etcdwrite.Result, error) {
			r := etcdwrite.Result{Key: n.Key, Outcome: etcdwrite.NotAttempted, Detail: "not attempted: the run stopped before it"}
			if !stopped(w.Pacing.Stop) {
				r = annotate(ctx, o.Dynamic, n, now())
			}
			w.Journal(r)
			return []etcdwrite.Result{r}, nil
		}})
	if out == nil {
		return nil, fmt.Errorf("annotate %s %s (to have the namespace controller look again): %w", a.Target, n.Annotation, err)
	}
	var r *etcdwrite.Result
	for i := range out.Results {
		if out.Results[i].Key == n.Key {
			r = &out.Results[i]
		}
	}
	switch {
	case err != nil:
		return r, fmt.Errorf("annotate %s %s: %w", a.Target, n.Annotation, err)
	case r == nil:
		return nil, fmt.Errorf("annotate %s %s: no outcome", a.Target, n.Annotation)
	case r.Outcome == etcdwrite.SkippedChanged:
		return r, fmt.Errorf("%s was %w (its UID is no longer %s): not annotated", a.Target, ErrRecreated, n.UID)
	case r.Outcome == etcdwrite.PatchFailed || r.Outcome == etcdwrite.NotAttempted:
		return r, fmt.Errorf("annotate %s %s (to have the namespace controller look again): %s", a.Target, n.Annotation, r.Detail)
	}
	return r, nil
}

// annotate writes n's annotation through the API server on the namespace
// the plan read, and only on it: SkippedChanged when the namespace of that
// name is another one (another UID), SkippedGone when it is gone already.
func annotate(ctx context.Context, dyn dynamic.Interface, n *NudgePlan, now time.Time) etcdwrite.Result {
	ri := dyn.Resource(namespacesResource)
	obj, err := ri.Get(ctx, n.Name, metav1.GetOptions{})
	if r, ok := n.notThere(obj, err); ok {
		return r
	}
	// The UID in the patch is its precondition: the API server refuses to
	// change a UID (422, metadata.uid is immutable), so a namespace created
	// again between the read and the patch is never annotated.
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"uid": n.UID,
		"annotations": map[string]string{n.Annotation: now.UTC().Format(time.RFC3339)}}})
	if err != nil {
		return etcdwrite.Result{Key: n.Key, Outcome: etcdwrite.PatchFailed, Detail: "the patch could not be made: " + err.Error()}
	}
	after, err := ri.Patch(ctx, n.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err == nil {
		rev, _ := strconv.ParseInt(after.GetResourceVersion(), 10, 64)
		return etcdwrite.Result{Key: n.Key, Outcome: Nudged, Revision: rev,
			Detail: fmt.Sprintf("%s set through the API server on the namespace reviewed (uid %s): the namespace controller looks at it again", n.Annotation, n.UID)}
	}
	if apierrors.IsConflict(err) || apierrors.IsInvalid(err) || apierrors.IsNotFound(err) {
		// Read again to say why it was refused: gone, or created again.
		obj, gerr := ri.Get(ctx, n.Name, metav1.GetOptions{})
		if r, ok := n.notThere(obj, gerr); ok {
			return r
		}
	}
	return etcdwrite.Result{Key: n.Key, Outcome: etcdwrite.PatchFailed, Detail: "the API server refused the annotation: " + err.Error()}
}

// notThere says, from a read of the namespace through the API server,
// whether it is not the one the plan read (gone, another UID, or unreadable)
// and the outcome that says so.
func (n *NudgePlan) notThere(obj *unstructured.Unstructured, err error) (etcdwrite.Result, bool) {
	switch {
	case apierrors.IsNotFound(err):
		return etcdwrite.Result{Key: n.Key, Outcome: etcdwrite.SkippedGone, Detail: "gone already (its deletion finished); not annotated"}, true
	case err != nil:
		return etcdwrite.Result{Key: n.Key, Outcome: etcdwrite.PatchFailed, Detail: "it could not be read through the API server (" + err.Error() + "); not annotated"}, true
	case string(obj.GetUID()) != n.UID:
		return etcdwrite.Result{Key: n.Key, Outcome: etcdwrite.SkippedChanged,
			Detail: fmt.Sprintf("namespace %s was deleted and created again since it was reviewed (uid %s, now %s): not annotated; the new namespace is left alone", n.Name, n.UID, obj.GetUID())}, true
	}
	return etcdwrite.Result{}, false
}

// ErrChanged is returned (wrapped) when a blocker changed between the
// analysis and the write.
var ErrChanged = errors.New("changed since the analysis")

// rejudge analyses the target again (analyze) and fails when a finalizer
// unstick would remove is no longer one to remove (served again) or a
// blocker is gone or changed.
func rejudge(ctx context.Context, a *Analysis, analyze func(ctx context.Context) (*Analysis, error)) error {
	if analyze == nil {
		return nil
	}
	now, err := analyze(ctx)
	if err != nil {
		return fmt.Errorf("analyse %s again: %w", a.Target, err)
	}
	if now.Refusal != "" {
		return fmt.Errorf("%w: %s", ErrChanged, now.Refusal)
	}
	// A namespace is two blockers under one key: its metadata finalizers
	// and its spec finalizers.
	type id struct {
		key  string
		spec bool
	}
	fresh := map[id]Blocker{}
	for _, b := range now.Blockers {
		fresh[id{b.Key, b.Spec}] = b
	}
	for _, b := range a.Blockers {
		if len(b.Remove) == 0 {
			continue
		}
		n, ok := fresh[id{b.Key, b.Spec}]
		switch {
		case !ok:
			return fmt.Errorf("%w: %s no longer holds %s; run unstick again", ErrChanged, b.Key, a.Target)
		case !slices.Equal(n.Remove, b.Remove):
			return fmt.Errorf("%w: %s now has finalizers [%s] to remove, not [%s] (served again, or changed); run unstick again",
				ErrChanged, b.Key, strings.Join(n.Remove, ", "), strings.Join(b.Remove, ", "))
		case n.ModRevision != b.ModRevision:
			return fmt.Errorf("%w: %s changed at revision %d (reviewed at %d); run unstick again", ErrChanged, b.Key, n.ModRevision, b.ModRevision)
		}
	}
	return nil
}

// stopped reports whether stop is closed.
func stopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}
