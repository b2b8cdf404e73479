package dangling

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/catalog"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/flagnames"
	"github.com/regghost/regghost/pkg/notice"
	"github.com/regghost/regghost/pkg/protect"
)

// ErrRefused is returned (wrapped) when nothing may be fixed.
var ErrRefused = errors.New("refused")

// Fix is what is done to one referring object: deleted, or rewritten
// without its dangling entries.
type Fix struct {
	Key         string `json:"key"`
	Kind        string `json:"kind"`
	Namespace   string `json:"namespace,omitempty"`
	Name        string `json:"name"`
	ModRevision int64  `json:"modRevision"`
	// Delete is set when the whole object goes; else Remove names the
	// webhooks, or the subjects ("ns/name"), that are taken out of it.
	Delete bool     `json:"delete"`
	Remove []string `json:"remove,omitempty"`
	// Refs are the references it fixes.
	Refs []etcdscan.DanglingRef `json:"references"`
}

// Refusal is a reference left alone, and why.
type Refusal struct {
	Ref    etcdscan.DanglingRef `json:"reference"`
	Reason string               `json:"reason"`
	// WayOut is the flag that takes it, if any.
	WayOut string `json:"wayOut,omitempty"`
}

// AcceptManagedFlag accepts a fix of an object Helm, Argo CD or Flux
// tracks, refused by default (flagnames.AcceptSingleWitness accepts one
// only etcd could confirm).
const AcceptManagedFlag = "--accept-managed"

// PlanOptions say what a fix may take.
type PlanOptions struct {
	// AcceptManaged fixes objects a GitOps tool or Helm tracks (it may put
	// them back).
	AcceptManaged bool
	// AcceptSingleWitness fixes references the API server could not confirm.
	AcceptSingleWitness bool
	// DeleteDown are APIServices, by name, whose Service is down (there,
	// without a ready endpoint) that the operator chose to delete, backed
	// up, so that discovery stops failing (unstick
	// --delete-unavailable-apiservice); any other down reference is never
	// fixed.
	DeleteDown []string
}

// fixable are the kinds a fix acts on, with their resource.
var fixable = map[string]schema.GroupVersionResource{
	"APIService":                     {Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"},
	"ValidatingWebhookConfiguration": {Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"},
	"MutatingWebhookConfiguration":   {Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"},
	"ClusterRoleBinding":             {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
	"RoleBinding":                    {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
}

// PlanFixes turns references into fixes: every gone reference of a kind
// regghost fixes, grouped by referring object. Down and ghost references,
// volumes and conversion webhooks are never fixed (but a down APIService
// named in DeleteDown); single-witness and GitOps-managed ones are refused
// unless accepted.
//
// An APIService is deleted. A webhook configuration or a binding is deleted
// whole only when each of its entries (ref.Entries) is a gone reference
// planned here: one whose sibling is refused, down, a ghost, live, or
// outside the references given (outside -n) only loses its gone entries.
func PlanFixes(refs []etcdscan.DanglingRef, o PlanOptions) ([]Fix, []Refusal) {
	byKey := map[string]*Fix{}
	// fields are the distinct entries planned per object.
	fields := map[string]map[string]bool{}
	var refused []Refusal
	for _, r := range refs {
		chosen := r.Kind == "APIService" && r.State == etcdscan.DanglingDown && contains(o.DeleteDown, r.Name)
		if _, ok := fixable[r.Kind]; !ok || (r.State != etcdscan.DanglingGone && !chosen) {
			continue
		}
		switch {
		case r.SingleWitness && !o.AcceptSingleWitness:
			refused = append(refused, Refusal{Ref: r, WayOut: flagnames.AcceptSingleWitness,
				Reason: "only etcd says " + r.Target + " is gone (the API server could not confirm it)"})
			continue
		case len(r.ManagedBy) > 0 && !o.AcceptManaged:
			refused = append(refused, Refusal{Ref: r, WayOut: AcceptManagedFlag,
				Reason: "managed by " + strings.Join(r.ManagedBy, "; ") + ": it may put back what the fix changes, or fail on it"})
			continue
		}
		f := byKey[r.Key]
		if f == nil {
			f = &Fix{Key: r.Key, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, ModRevision: r.ModRevision}
			byKey[r.Key], fields[r.Key] = f, map[string]bool{}
		}
		f.Refs = append(f.Refs, r)
		fields[r.Key][r.Field] = true
		var entry string
		switch r.Kind {
		case "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration":
			entry = strings.TrimSuffix(strings.TrimPrefix(r.Field, "webhooks["), "].clientConfig.service")
		case "ClusterRoleBinding", "RoleBinding":
			entry = strings.TrimPrefix(r.Target, "serviceaccount ")
		default:
			f.Delete = true
			continue
		}
		if !contains(f.Remove, entry) {
			f.Remove = append(f.Remove, entry)
		}
	}
	var fixes []Fix
	for key, f := range byKey {
		if !f.Delete {
			f.Delete = everyEntry(f.Refs, len(fields[key])) && !keepObject(f.Refs)
		}
		if f.Delete {
			f.Remove = nil
		}
		fixes = append(fixes, *f)
	}
	sort.Slice(fixes, func(i, j int) bool { return fixes[i].Key < fixes[j].Key })
	return fixes, refused
}

// keepObject says whether a reference asks that its object be edited,
// never deleted (DanglingRef.KeepObject).
func keepObject(refs []etcdscan.DanglingRef) bool {
	for _, r := range refs {
		if r.KeepObject {
			return true
		}
	}
	return false
}

// everyEntry says whether the planned distinct entries of one object are
// all it holds, as each of its references says (a disagreement, or an
// unknown count, says no).
func everyEntry(refs []etcdscan.DanglingRef, planned int) bool {
	for _, r := range refs {
		if r.Entries <= 0 || r.Entries != planned {
			return false
		}
	}
	return len(refs) > 0
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// FixOptions configure Apply.
type FixOptions struct {
	// Client reads the keys to back up, and reads them back.
	Client *clientv3.Client
	// Dynamic writes through the API server.
	Dynamic    dynamic.Interface
	BackupRoot string
	// Registry is the registry prefix, for the backup and for reading each
	// target again right before its write.
	Registry string
	// Scope names what is fixed, for the backup ("dangling references into
	// namespace kb-system").
	Scope string
	Now   func() time.Time
	// Notices gets the lock's lines; Decrypt opens an encrypted
	// kube-system namespace (the cluster's identity).
	Notices notice.Func
	Decrypt backup.Decrypter
}

// Result is what Apply did.
type Result struct {
	Dir     string             `json:"dir"`
	Backup  string             `json:"backup"`
	Results []etcdwrite.Result `json:"results"`
}

// Apply makes the fixes through the API server: first a verified per-key
// backup of every object it touches (restore puts them back: deleted ones
// are created again, rewritten ones written back while nobody changed them
// since), then each change preconditioned on the reviewed resourceVersion,
// then a read-back of each. Right before each change every target of the
// fix is judged again, fresh (its own key in etcd and the API server's GET
// of it): a fix whose target is no longer gone is left alone (etcdwrite.TargetNotGone),
// and Apply returns an error once every fix has an outcome. The caller runs
// it under the writer's lock, so the judgment and the write are not
// interleaved with another regghost.
func Apply(ctx context.Context, fixes []Fix, o FixOptions) (*Result, error) {
	if len(fixes) == 0 {
		return nil, fmt.Errorf("%w: no dangling reference to fix; nothing was changed", ErrRefused)
	}
	if o.Dynamic == nil {
		return nil, fmt.Errorf("%w: fixes go through the API server, which cannot be reached; nothing was changed", ErrRefused)
	}
	if o.Registry == "" {
		return nil, fmt.Errorf("%w: no registry prefix to read the targets again under; nothing was changed", ErrRefused)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	wants := make([]protect.Want, len(fixes))
	for i, f := range fixes {
		var why []string
		for _, r := range f.Refs {
			why = append(why, r.Field+" -> "+r.Target)
		}
		wants[i] = protect.Want{ModRevision: f.ModRevision, Required: true, Entry: backup.Entry{Key: f.Key,
			Classes: []string{"dangling-reference"}, Reason: "dangling: " + strings.Join(why, "; ")}}
	}
	out, err := protect.Run(ctx, protect.Job{Client: o.Client, Holder: "regghost dangling: " + o.Scope, Notices: o.Notices,
		Prefix: o.Registry, Decrypt: o.Decrypt, Action: backup.ActionDangling,
		Backup: &protect.Record{Root: o.BackupRoot, Scope: o.Scope, Action: backup.ActionDangling, Keys: wants, Now: o.Now},
		Write: func(ctx context.Context, w *protect.Writer) ([]etcdwrite.Result, error) {
			results := make([]etcdwrite.Result, len(fixes))
			for i, f := range fixes {
				// A stop (a signal, or an audit log that can no longer be
				// written) is honoured between fixes.
				select {
				case <-w.Pacing.Stop:
					results[i] = etcdwrite.Result{Key: f.Key, Outcome: etcdwrite.NotAttempted, Detail: "not attempted: the run stopped before it"}
					w.Journal(results[i])
					continue
				default:
				}
				// Each target is read again right before its write: a
				// Service or account created again since the plan stops
				// the fix.
				if why := rejudge(ctx, o.Client, o.Dynamic, o.Registry, f); why != "" {
					results[i] = etcdwrite.Result{Key: f.Key, Outcome: etcdwrite.TargetNotGone, Detail: why}
					w.Journal(results[i])
					continue
				}
				// The revision a rewritten object was left at is journaled
				// with its outcome: restore writes the backed-up bytes back
				// only while the object is still at it.
				r, rev := apply(ctx, o.Dynamic, f)
				r.Revision = rev
				if r.Outcome == etcdwrite.Deleted {
					rctx, cancel := etcdwrite.ReadBackContext(ctx)
					resp, err := o.Client.Get(rctx, f.Key, clientv3.WithCountOnly())
					cancel()
					switch {
					case err != nil:
						r.Detail += fmt.Sprintf("; reading it back failed (%v)", err)
					case resp.Count != 0:
						r = etcdwrite.Result{Key: f.Key, Outcome: etcdwrite.StillPresent, Detail: "deleted through the API server, but its key is still in etcd (a finalizer?)"}
					}
				}
				w.Journal(r)
				results[i] = r
			}
			return results, nil
		}})
	if out == nil {
		if errors.Is(err, protect.ErrNothingChanged) {
			return nil, fmt.Errorf("%w: %w", ErrRefused, err)
		}
		return nil, err
	}
	res := &Result{Dir: out.Dir, Backup: out.Backup, Results: out.Results}
	dir := out.Dir
	if err != nil {
		return res, err
	}
	notGone := 0
	for _, r := range res.Results {
		if r.Outcome == etcdwrite.FixFailed {
			return res, fmt.Errorf("some fixes failed (see above); restore puts back what was changed: regghost restore %s --confirm", dir)
		}
		if r.Outcome == etcdwrite.TargetNotGone {
			notGone++
		}
	}
	if notGone > 0 {
		return res, fmt.Errorf("%d of %d fixes were left alone: what they point at is no longer judged gone (see above); run regghost dangling again to judge them anew", notGone, len(fixes))
	}
	return res, nil
}

// targetResources are the kinds of target a reference names ("service
// ns/name"), with the resource judged.
var targetResources = map[string]catalog.Resource{
	"service":        servicesResource,
	"serviceaccount": serviceAccountsResource,
	"claim":          claimsResource,
}

// rejudge reads each target of f again, fresh, as Find judges it gone: its
// own key in etcd, and the API server's GET of it (404). It says why the fix
// must be left alone ("service kb/hook exists again (the API server serves
// it); left alone"), or "" when every target is still gone. A target judged
// on etcd's word alone (accepted single witness) is not refused when the
// API server still cannot answer.
func rejudge(ctx context.Context, kv clientv3.KV, dyn dynamic.Interface, registry string, f Fix) string {
	seen := map[string]bool{}
	for _, r := range f.Refs {
		if seen[r.Target] {
			continue
		}
		seen[r.Target] = true
		if r.State == etcdscan.DanglingDown {
			if why := stillDown(ctx, dyn, f); why != "" {
				return why
			}
			continue
		}
		kind, nsName, _ := strings.Cut(r.Target, " ")
		ns, name, _ := strings.Cut(nsName, "/")
		res, ok := targetResources[kind]
		if !ok || ns == "" || name == "" {
			return fmt.Sprintf("%s cannot be judged again (%q is no target regghost reads); left alone", f.Key, r.Target)
		}
		key := etcdscan.ObjectKey(registry, res.Prefix(), ns, name)
		resp, err := kv.Get(ctx, key, clientv3.WithCountOnly())
		switch {
		case err != nil:
			return fmt.Sprintf("%s cannot be read again to judge %s (%v); left alone", key, r.Target, err)
		case resp.Count > 0:
			return fmt.Sprintf("%s exists again (%s is stored); left alone", r.Target, key)
		}
		gvr := schema.GroupVersionResource{Group: res.Group, Version: res.Version, Resource: res.Resource}
		_, err = dyn.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		switch {
		case err == nil:
			return fmt.Sprintf("%s exists again (the API server serves it); left alone", r.Target)
		case apierrors.IsNotFound(err), r.SingleWitness:
			// Still gone, as it was judged.
		default:
			return fmt.Sprintf("the API server cannot confirm again that %s is gone (%s); left alone", r.Target, firstLine(err))
		}
	}
	return ""
}

// stillDown says why a down APIService chosen for deletion must be left
// alone now, or "": the API server says it is available again (its
// backend answers), or cannot say.
func stillDown(ctx context.Context, dyn dynamic.Interface, f Fix) string {
	u, err := dyn.Resource(fixable["APIService"]).Get(ctx, f.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Sprintf("the API server cannot say again whether APIService %s is still unavailable (%s); left alone", f.Name, firstLine(err))
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Available" && m["status"] == "True" {
			return "APIService " + f.Name + " is available again (its backend answers); left alone"
		}
	}
	return ""
}

// apply makes one fix and reads it back through the API server. It returns
// the revision a rewritten object was left at.
func apply(ctx context.Context, dyn dynamic.Interface, f Fix) (etcdwrite.Result, int64) {
	gvr := fixable[f.Kind]
	client := dyn.Resource(gvr).Namespace(f.Namespace)
	rv := strconv.FormatInt(f.ModRevision, 10)
	if f.Delete {
		err := client.Delete(ctx, f.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
		if err != nil && !apierrors.IsNotFound(err) {
			return etcdwrite.Result{Key: f.Key, Outcome: etcdwrite.FixFailed, Detail: fmt.Sprintf("delete %s %s (preconditioned on resourceVersion %s): %v", f.Kind, f.Name, rv, firstLine(err))}, 0
		}
		return etcdwrite.Result{Key: f.Key, Outcome: etcdwrite.Deleted, Detail: fmt.Sprintf("%s %s deleted through the API server (resourceVersion %s)", f.Kind, f.Name, rv)}, 0
	}
	obj, err := client.Get(ctx, f.Name, metav1.GetOptions{})
	if err != nil {
		return etcdwrite.Result{Key: f.Key, Outcome: etcdwrite.FixFailed, Detail: fmt.Sprintf("read %s %s: %v", f.Kind, f.Name, firstLine(err))}, 0
	}
	if obj.GetResourceVersion() != rv {
		return etcdwrite.Result{Key: f.Key, Outcome: etcdwrite.FixFailed, Detail: fmt.Sprintf("%s %s changed since it was reviewed (resourceVersion %s, reviewed %s); left alone", f.Kind, f.Name, obj.GetResourceVersion(), rv)}, 0
	}
	if err := strip(obj.Object, f); err != nil {
		return etcdwrite.Result{Key: f.Key, Outcome: etcdwrite.FixFailed, Detail: err.Error()}, 0
	}
	// Update carries the reviewed resourceVersion: the API server refuses
	// it if the object changed in between.
	got, err := client.Update(ctx, obj, metav1.UpdateOptions{})
	if err != nil {
		return etcdwrite.Result{Key: f.Key, Outcome: etcdwrite.FixFailed, Detail: fmt.Sprintf("update %s %s (resourceVersion %s): %v", f.Kind, f.Name, rv, firstLine(err))}, 0
	}
	rev, _ := strconv.ParseInt(got.GetResourceVersion(), 10, 64)
	return etcdwrite.Result{Key: f.Key, Outcome: etcdwrite.Rewritten, Detail: fmt.Sprintf("removed %s through the API server (resourceVersion %s -> %s)", strings.Join(f.Remove, ", "), rv, got.GetResourceVersion())}, rev
}

// strip removes the named webhooks, or ServiceAccount subjects, from obj.
func strip(obj map[string]any, f Fix) error {
	field, match := "webhooks", func(m map[string]any) string { return str(m, "name") }
	if f.Kind == "ClusterRoleBinding" || f.Kind == "RoleBinding" {
		field = "subjects"
		match = func(m map[string]any) string {
			if str(m, "kind") != "ServiceAccount" {
				return ""
			}
			ns := str(m, "namespace")
			if ns == "" {
				ns = f.Namespace
			}
			return ns + "/" + str(m, "name")
		}
	}
	items, _, _ := unstructured.NestedSlice(obj, field)
	drop := map[string]bool{}
	for _, r := range f.Remove {
		drop[r] = true
	}
	var keep []any
	for _, it := range items {
		m, _ := it.(map[string]any)
		if !drop[match(m)] {
			keep = append(keep, it)
		}
	}
	if len(keep) == len(items) {
		return fmt.Errorf("%s %s no longer holds %s; left alone", f.Kind, f.Name, strings.Join(f.Remove, ", "))
	}
	return unstructured.SetNestedSlice(obj, keep, field)
}

func firstLine(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// Unfixed counts the references whose target is gone that a run leaves:
// those neither a fix takes nor a refusal names (no fix exists for a
// volume's claim, nor here for a ghost target whose purge is the fix),
// and those of a fix whose outcome (results, by key) is not deleted or
// rewritten. A run that leaves them has left something, as its dry run
// found it.
func Unfixed(refs []etcdscan.DanglingRef, fixes []Fix, refused []Refusal, results []etcdwrite.Result) int {
	done := map[string]bool{}
	for _, r := range results {
		if r.Outcome == etcdwrite.Deleted || r.Outcome == etcdwrite.Rewritten {
			done[r.Key] = true
		}
	}
	taken := map[string]bool{}
	for _, f := range fixes {
		if results != nil && !done[f.Key] {
			continue
		}
		for _, r := range f.Refs {
			taken[r.Key+"\x00"+r.Field] = true
		}
	}
	for _, r := range refused {
		taken[r.Ref.Key+"\x00"+r.Ref.Field] = true
	}
	n := 0
	for _, r := range refs {
		if r.State == etcdscan.DanglingGone && !taken[r.Key+"\x00"+r.Field] {
			n++
		}
	}
	return n
}
