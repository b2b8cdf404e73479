// Package unstick explains why a namespace or a CustomResourceDefinition is
// stuck terminating, and resolves it the way that makes no ghosts: through
// the API server, removing the finalizers nobody will remove, each patch
// preconditioned on the resourceVersion that was reviewed, behind a verified
// per-key backup; then it waits for the deletion to finish and checks that
// nothing of it is left in etcd.
package unstick

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/regghost/regghost/pkg/catalog"
	"github.com/regghost/regghost/pkg/dangling"
	"github.com/regghost/regghost/pkg/decode"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/impact"
	"github.com/regghost/regghost/pkg/objread"
	"github.com/regghost/regghost/pkg/plural"
	"github.com/regghost/regghost/pkg/resolve"
)

// Blocker is an object that holds the deletion back with its finalizers.
type Blocker struct {
	Key        string   `json:"key"`
	Kind       string   `json:"kind"`
	Namespace  string   `json:"namespace,omitempty"`
	Name       string   `json:"name"`
	Finalizers []string `json:"finalizers"`
	// ModRevision is the key's mod revision: the resourceVersion a patch is
	// preconditioned on.
	ModRevision int64 `json:"modRevision"`
	// Resource is the API resource to patch it through.
	Resource catalog.Resource `json:"resource"`
	// Served says whether anything still serves each finalizer.
	Served []string `json:"served"`
	// Remove are the finalizers unstick removes: all but those Kubernetes
	// itself serves. Keep are the others, left in place.
	Remove []string `json:"remove"`
	Keep   []string `json:"keep,omitempty"`
	// Irreversible are the effects outside etcd of removing finalizers in
	// Remove whose controller (outside kube-controller-manager) is known to
	// do something a restore cannot undo; unstick refuses them unless
	// accepted with --accept-impact.
	Irreversible []impact.Effect `json:"irreversible,omitempty"`
	// Spec is set for the namespace's own spec.finalizers, removed through
	// its finalize subresource.
	Spec bool `json:"spec,omitempty"`
}

// Analysis is why a namespace or CRD is stuck, and the next action.
type Analysis struct {
	// Target is "namespace NAME" or "customresourcedefinition NAME".
	Target string `json:"target"`
	Key    string `json:"key"`
	// UID is the target's UID as the plan read it: what a write by name
	// compares first (a namespace deleted and created again under the same
	// name is another one).
	UID         string        `json:"uid,omitempty"`
	Exists      bool          `json:"exists"`
	Terminating bool          `json:"terminating"`
	Since       time.Duration `json:"since,omitempty"`
	// Finalizers are the target's own finalizers.
	Finalizers []string `json:"finalizers,omitempty"`
	// Conditions are the namespace's status conditions that are True.
	Conditions []string `json:"conditions,omitempty"`
	// Remaining counts the keys still stored under it.
	Remaining int `json:"remaining"`
	// Nowhere says nothing of that name is in etcd (nor, so, in the API
	// server): a typo, or a deletion that finished. Closest are the names
	// that exist nearest to it.
	Nowhere bool     `json:"nowhere,omitempty"`
	Closest []string `json:"closest,omitempty"`
	// NoAPI says why the API server was not reached: unstick acts through
	// it, so the plan is read from etcd alone and --confirm is refused.
	NoAPI string `json:"noAPI,omitempty"`
	// Blockers are the remaining objects with finalizers.
	Blockers []Blocker `json:"blockers"`
	// Unavailable lists the APIServices that are not available, with their
	// service: the namespace controller needs every API.
	Unavailable []string `json:"unavailableAPIServices,omitempty"`
	// Next is the next action, in words.
	Next string `json:"next"`
	// Refusal is set when unstick must not act, and why.
	Refusal string `json:"refusal,omitempty"`
	// Unreadable are remaining keys whose metadata could not be read
	// (encrypted, and the API server could not be asked).
	Unreadable []string `json:"unreadable,omitempty"`
	// Accepted are the irreversible effects accepted with --accept-impact.
	Accepted []impact.Kind `json:"accepted,omitempty"`
	// UnavailableNames are the APIServices in Unavailable, by name.
	UnavailableNames []string `json:"-"`
	// failedGroups are the API groups whose discovery fails.
	failedGroups []string
	// Dangling are the unavailable APIServices whose Service (or its
	// namespace) is gone or down, with what pointed where.
	Dangling []etcdscan.DanglingRef `json:"dangling,omitempty"`
	// DeleteAPIServices are the dangling (gone) APIServices unstick deletes
	// to let the deletion finish: every unavailable one is among them, and
	// so are the down ones named in DeleteUnavailable.
	DeleteAPIServices []etcdscan.DanglingRef `json:"deleteAPIServices,omitempty"`
	// DeleteUnavailable are the APIServices, by name, the operator chose
	// to delete although their Service is only down
	// (--delete-unavailable-apiservice): backed up, and put back by
	// restore once the backend answers again.
	DeleteUnavailable []string `json:"deleteUnavailable,omitempty"`
	// unavailableWhy is each unavailable APIService's condition, by name.
	unavailableWhy map[string]string
	// Nudge is the annotation --confirm writes on the namespace once the
	// APIServices in DeleteAPIServices are deleted; nil when the plan
	// writes none.
	Nudge *NudgePlan `json:"nudge,omitempty"`
}

// NudgePlan is the annotation unstick writes on a namespace once the
// APIServices that held its deletion are deleted, so that the namespace
// controller looks at it again within seconds instead of at its next retry,
// minutes later. It is part of the plan: the dry run shows it, and
// --confirm writes it only on the namespace the plan read (its UID).
type NudgePlan struct {
	// Key is the namespace's key, Name its name, UID the UID the plan read.
	Key  string `json:"key"`
	Name string `json:"name"`
	UID  string `json:"uid"`
	// Annotation is the annotation written (NudgeAnnotation), set to the
	// time of the write.
	Annotation string `json:"annotation"`
}

// Describe says the nudge as the plan shows it, with verb ("annotate",
// "annotates").
func (n *NudgePlan) Describe(verb string) string {
	return verb + " namespace " + n.Name + " " + n.Annotation + " (to have the namespace controller look again)"
}

// nudgePlan is the nudge a plan that deletes APIServices writes on its
// namespace. Without the UID the plan read, a write by name could land on
// a namespace created again since: none is planned then, and the namespace
// controller finds the deletion at its next retry.
func (a *Analysis) nudgePlan() *NudgePlan {
	name, ok := strings.CutPrefix(a.Target, "namespace ")
	if !ok || a.UID == "" || len(a.DeleteAPIServices) == 0 {
		return nil
	}
	return &NudgePlan{Key: a.Key, Name: name, UID: a.UID, Annotation: NudgeAnnotation}
}

// DeleteUnavailableFlag is the flag that names a down APIService to
// delete.
const DeleteUnavailableFlag = "--delete-unavailable-apiservice"

// Follow takes the dangling references of the APIServices (pkg/dangling)
// and decides again: a namespace stuck on discovery of an APIService whose
// Service is gone is unblocked by deleting that APIService; one whose
// Service is down is not (bring it back).
func (a *Analysis) Follow(refs []etcdscan.DanglingRef) {
	a.Dangling, a.DeleteAPIServices, a.Nudge = nil, nil, nil
	for _, r := range refs {
		if r.Kind == "APIService" && contains(a.UnavailableNames, r.Name) {
			a.Dangling = append(a.Dangling, r)
		}
	}
	a.Next, a.Refusal = "", ""
	a.decide()
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// danglingDecision says what to do when every unavailable APIService is a
// dangling one: delete the gone ones (ok), or refuse for a down one.
func (a *Analysis) danglingDecision() (next, refusal string, ok bool) {
	if len(a.Dangling) == 0 || len(a.Dangling) != len(a.UnavailableNames) {
		return "", "", false
	}
	// Every group whose discovery fails must be one of theirs.
	for _, g := range a.failedGroups {
		theirs := false
		for _, r := range a.Dangling {
			_, group, _ := strings.Cut(r.Name, ".")
			theirs = theirs || group == g
		}
		if !theirs {
			return "", "", false
		}
	}
	var gone []etcdscan.DanglingRef
	for _, r := range a.Dangling {
		if r.State == etcdscan.DanglingGhost {
			next, refusal := a.ghostService(r)
			return next, refusal, true
		}
		if r.State == etcdscan.DanglingDown {
			if contains(a.DeleteUnavailable, r.Name) {
				gone = append(gone, r)
				continue
			}
			next, refusal := a.downService(r)
			return next, refusal, true
		}
		if r.SingleWitness {
			return "", "", false
		}
		gone = append(gone, r)
	}
	a.DeleteAPIServices = gone
	a.Nudge = a.nudgePlan()
	var names, chosen []string
	for _, r := range gone {
		names = append(names, r.Name+" ("+r.Why+")")
		if r.State == etcdscan.DanglingDown {
			chosen = append(chosen, r.Name+": "+stopsWhileGone(r))
		}
	}
	which := "dangling APIService"
	if len(chosen) > 0 {
		which = "APIService"
	}
	if len(gone) > 1 {
		which += "s"
	}
	groups := plural.Pick(len(gone), "its group", "their groups")
	next = "delete the " + which + " " + strings.Join(names, "; ") + ": discovery of " + groups + " fails and every namespace deletion hangs on it; `regghost unstick ... --confirm` deletes " + plural.Them(len(gone)) + " through the API server, backed up, "
	if a.Nudge != nil {
		next += a.Nudge.Describe("annotates") + ", "
	}
	next += "then waits for the deletion to finish"
	if len(chosen) > 0 {
		next += "; until `regghost restore <its backup>` puts " + plural.Them(len(chosen)) + " back (once " + plural.Pick(len(chosen), "its backend answers", "their backends answer") + " again), " + strings.Join(chosen, "; ")
	}
	return next, "", true
}

// downService says the two ways out when an unavailable APIService's
// Service is there without a ready endpoint (metrics-server down: the
// commonest stuck namespace): bring the backend back, and the namespace
// controller finishes; or delete the APIService, backed up, with what
// stops until restore puts it back. unstick takes the second only when the
// operator names the APIService with --delete-unavailable-apiservice.
func (a *Analysis) downService(r etcdscan.DanglingRef) (next, refusal string) {
	cond := a.unavailableWhy[r.Name]
	if cond != "" {
		cond = "; Available=False " + cond
	}
	cmd := "regghost unstick " + a.Target + " " + DeleteUnavailableFlag + " " + r.Name
	if len(r.ManagedBy) > 0 {
		// Refused without it: say so in the command, and why.
		cmd += " " + dangling.AcceptManagedFlag
		cond += "; managed by " + strings.Join(r.ManagedBy, "; ") + ", which may put it back at its next sync"
	}
	cmd += " --confirm"
	version, group, _ := strings.Cut(r.Name, ".")
	next = "APIService " + r.Name + " is unavailable: " + r.Why + cond + "; discovery of " + group + "/" + version +
		" fails, and every namespace deletion in the cluster waits on it. Either bring " + r.Target + " back (its pods, its endpoints), and the namespace controller finishes;" +
		" or delete the APIService, backed up: `" + cmd + "` (" + stopsWhileGone(r) + ", until `regghost restore <its backup>` puts it back, which you run once its backend answers again)"
	refusal = "APIService " + r.Name + " is unavailable (" + r.Why + cond + "), not dangling: bring " + r.Target + " back, or delete it behind a backup with `" + cmd + "` (" + stopsWhileGone(r) + " until it is restored)"
	return next, refusal
}

// DownDeleted says, for each APIService the results say was deleted
// although its Service was only down, what stops until it is restored and
// whose return to wait for.
func (a *Analysis) DownDeleted(results []etcdwrite.Result) []string {
	deleted := map[string]bool{}
	for _, r := range results {
		deleted[r.Key] = deleted[r.Key] || r.Outcome == etcdwrite.Deleted
	}
	var out []string
	for _, r := range a.DeleteAPIServices {
		if r.State == etcdscan.DanglingDown && deleted[r.Key] {
			out = append(out, "APIService "+r.Name+" was deleted while "+r.Target+" is down: "+stopsWhileGone(r)+" until it is put back; once "+r.Target+" answers again, restore it")
		}
	}
	return out
}

// stopsWhileGone says what stops while an APIService is deleted: every
// client of its group and version, named for the ones everyone has.
func stopsWhileGone(r etcdscan.DanglingRef) string {
	version, group, _ := strings.Cut(r.Name, ".")
	switch group {
	case "metrics.k8s.io":
		return "`kubectl top` and HorizontalPodAutoscalers on CPU and memory stop"
	case "custom.metrics.k8s.io", "external.metrics.k8s.io":
		return "HorizontalPodAutoscalers on " + strings.TrimSuffix(group, ".metrics.k8s.io") + " metrics stop"
	}
	return "every client of " + group + "/" + version + " gets 404"
}

// ghostService says the way out when an unavailable APIService's Service
// is a ghost of a force-deleted namespace: still stored and served, so not
// dangling yet, and only the purge of that namespace removes it. The exact
// commands, in order: the purge (refused as callers-fail while the
// APIService calls the Service, hence its accept), then unstick again,
// which deletes the APIService once its Service is gone.
func (a *Analysis) ghostService(r etcdscan.DanglingRef) (next, refusal string) {
	purge := "regghost purge --namespace " + r.TargetNamespace + " " + impact.AcceptImpactFlag + " " + string(impact.CallersFail) + " --confirm"
	again := "regghost unstick " + a.Target + " --confirm"
	next = "APIService " + r.Name + " calls " + r.Target + ", a ghost of the force-deleted namespace " + r.TargetNamespace + " (" + r.Why + "); run, in order: (1) `" + purge +
		"` removes the ghost Service and the rest of that namespace (its dry run, without --confirm, lists them); (2) `" + again + "` then deletes the APIService, whose Service is gone, and waits for the deletion to finish"
	refusal = "APIService " + r.Name + " is unavailable because its Service is a ghost of namespace " + r.TargetNamespace + ": first `" + purge + "`, then `" + again + "`"
	return next, refusal
}

// Accept takes the effect kinds given with --accept-impact and decides again.
func (a *Analysis) Accept(kinds []impact.Kind) {
	a.Accepted = kinds
	a.Next, a.Refusal = "", ""
	a.decide()
}

// refusedEffects are the irreversible effects of removing finalizers that
// were not accepted.
func (a *Analysis) refusedEffects() []impact.Effect {
	var out []impact.Effect
	for _, b := range a.Blockers {
		for _, e := range b.Irreversible {
			accepted := false
			for _, k := range a.Accepted {
				accepted = accepted || k == e.Kind
			}
			if !accepted {
				out = append(out, e)
			}
		}
	}
	return out
}

// Readers are how unstick reads what it decides on; any may be nil.
type Readers struct {
	// Served is the API server's discovery (nil when it cannot be asked).
	Served *catalog.Catalog
	// API reads objects through the API server (*apiview.View), for
	// values encrypted at rest.
	API objread.APIReader
	// Decrypter is --encryption-provider-config.
	Decrypter resolve.Decrypter
}

// prepare loads the shared resolver and the content reader.
func (in Readers) prepare(ctx context.Context, store etcdscan.Store, registry string) (*objread.Reader, error) {
	types, err := resolve.Load(ctx, store, registry, in.Served, in.Decrypter)
	if err != nil {
		return nil, err
	}
	return &objread.Reader{Registry: registry, Types: types, Decrypter: in.Decrypter, API: in.API}, nil
}

// Namespace analyses a namespace from the keyspace. served is the API
// server's catalog (nil when it cannot be asked), failed its groups whose
// discovery failed.
func Namespace(ctx context.Context, store etcdscan.Store, registry, name string, in Readers, now time.Time) (*Analysis, error) {
	a := &Analysis{Target: "namespace " + name, Key: registry + "namespaces/" + name}
	reader, err := in.prepare(ctx, store, registry)
	if err != nil {
		return nil, err
	}
	kv, err := store.Get(ctx, a.Key)
	if err != nil {
		return nil, err
	}
	if kv != nil {
		a.Exists = true
		obj, err := reader.Read(ctx, a.Key, kv.Value)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", a.Key, err)
		}
		ns, ok := obj.(*corev1.Namespace)
		if !ok {
			return nil, fmt.Errorf("%s holds a %T, not a Namespace", a.Key, obj)
		}
		a.UID = string(ns.UID)
		a.Finalizers = append(a.Finalizers, ns.Finalizers...)
		var spec []string
		for _, f := range ns.Spec.Finalizers {
			a.Finalizers = append(a.Finalizers, "spec:"+string(f))
			spec = append(spec, string(f))
		}
		if ns.DeletionTimestamp != nil {
			a.Terminating, a.Since = true, now.Sub(ns.DeletionTimestamp.Time).Round(time.Second)
			nsRes := catalog.Resource{Version: "v1", Resource: "namespaces"}
			a.ownBlocker(Blocker{Key: a.Key, Kind: "Namespace", Name: name, Finalizers: ns.Finalizers, ModRevision: kv.ModRevision, Resource: nsRes})
			a.ownBlocker(Blocker{Key: a.Key, Kind: "Namespace", Name: name, Finalizers: spec, ModRevision: kv.ModRevision, Resource: nsRes, Spec: true})
		}
		for _, c := range ns.Status.Conditions {
			if c.Status == corev1.ConditionTrue {
				a.Conditions = append(a.Conditions, fmt.Sprintf("%s (%s): %s", c.Type, c.Reason, c.Message))
			}
		}
	}
	err = etcdscan.WalkNamespace(ctx, store, registry, name, false, func(kv *mvccpb.KeyValue) error {
		a.Remaining++
		return a.noteBlocker(ctx, reader, kv)
	})
	if err != nil {
		return nil, err
	}
	if a.Unavailable, a.UnavailableNames, a.unavailableWhy, err = unavailableAPIServices(ctx, store, registry); err != nil {
		return nil, err
	}
	if in.Served != nil {
		for _, g := range in.Served.FailedGroups() {
			a.Unavailable = appendOnce(a.Unavailable, "discovery of group "+g+" fails")
			a.failedGroups = append(a.failedGroups, g)
		}
	}
	if err := servers(ctx, store, registry, a.Blockers); err != nil {
		return nil, err
	}
	a.decide()
	return a, nil
}

// CRD analyses a CustomResourceDefinition stuck on its cleanup finalizer.
func CRD(ctx context.Context, store etcdscan.Store, registry, name string, in Readers, now time.Time) (*Analysis, error) {
	a := &Analysis{Target: "customresourcedefinition " + name, Key: registry + "apiextensions.k8s.io/customresourcedefinitions/" + name}
	reader, err := in.prepare(ctx, store, registry)
	if err != nil {
		return nil, err
	}
	kv, err := store.Get(ctx, a.Key)
	if err != nil {
		return nil, err
	}
	r, ok := catalog.CustomFromCRDName(name)
	if !ok {
		return nil, fmt.Errorf("%q is not a CustomResourceDefinition name (<plural>.<group>)", name)
	}
	if kv != nil {
		a.Exists = true
		obj, err := reader.Read(ctx, a.Key, kv.Value)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", a.Key, err)
		}
		crd, err := asCRD(obj)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", a.Key, err)
		}
		a.Finalizers = crd.Finalizers
		a.UID = string(crd.UID)
		if crd.DeletionTimestamp != nil {
			a.Terminating, a.Since = true, now.Sub(crd.DeletionTimestamp.Time).Round(time.Second)
			a.ownBlocker(Blocker{Key: a.Key, Kind: "CustomResourceDefinition", Name: name, Finalizers: crd.Finalizers, ModRevision: kv.ModRevision,
				Resource: catalog.Resource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}})
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Terminating && c.Status == apiextensionsv1.ConditionTrue {
				a.Conditions = append(a.Conditions, fmt.Sprintf("%s (%s): %s", c.Type, c.Reason, c.Message))
			}
		}
	}
	prefix := registry + r.Prefix() + "/"
	err = store.Range(ctx, prefix, etcdscan.PrefixEnd(prefix), false, func(kv *mvccpb.KeyValue) error {
		a.Remaining++
		return a.noteBlocker(ctx, reader, kv)
	})
	if err != nil {
		return nil, err
	}
	if err := servers(ctx, store, registry, a.Blockers); err != nil {
		return nil, err
	}
	a.decide()
	return a, nil
}

// noteBlocker records a remaining object that is being deleted and has
// finalizers. Its value is read through the content reader (decrypted, or
// through the API server); one nobody can read is listed, and unstick
// refuses while it is.
func (a *Analysis) noteBlocker(ctx context.Context, reader *objread.Reader, kv *mvccpb.KeyValue) error {
	k, err := etcdscan.ParseKey(reader.Registry, string(kv.Key))
	if err != nil {
		return nil
	}
	res, src := reader.Types.Resource(k.Prefix)
	if reader.Types.Served != nil && src != resolve.Discovery {
		// Not served now: there is no version to patch it through.
		res.Version = ""
	}
	obj, err := reader.Read(ctx, string(kv.Key), kv.Value)
	if err != nil {
		a.Unreadable = append(a.Unreadable, string(kv.Key))
		return nil
	}
	meta, err := apimeta.Accessor(obj)
	if err != nil {
		a.Unreadable = append(a.Unreadable, string(kv.Key))
		return nil
	}
	if len(meta.GetFinalizers()) == 0 || meta.GetDeletionTimestamp() == nil {
		return nil
	}
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	if kind == "" {
		kind = res.Kind
	}
	a.Blockers = append(a.Blockers, Blocker{Key: string(kv.Key), Kind: kind, Namespace: k.Namespace, Name: k.Name,
		Finalizers: meta.GetFinalizers(), ModRevision: kv.ModRevision, Resource: res})
	return nil
}

// ownBlocker records the target's own finalizers that Kubernetes does not
// serve (its own controller's are left alone).
func (a *Analysis) ownBlocker(b Blocker) {
	for _, f := range b.Finalizers {
		if _, builtin := builtinFinalizers[f]; !builtin {
			a.Blockers = append(a.Blockers, b)
			return
		}
	}
}

// unavailableAPIServices reads the APIServices whose Available condition is
// not True, from the keyspace.
func unavailableAPIServices(ctx context.Context, store etcdscan.Store, registry string) ([]string, []string, map[string]string, error) {
	var out, names []string
	why := map[string]string{}
	start := registry + "apiregistration.k8s.io/apiservices/"
	err := store.Range(ctx, start, etcdscan.PrefixEnd(start), false, func(kv *mvccpb.KeyValue) error {
		as, err := decode.APIService(kv.Value)
		if err != nil {
			return nil
		}
		for _, c := range as.Status.Conditions {
			if c.Type == "Available" && c.Status != "True" {
				svc := "local"
				if as.Spec.Service != nil {
					svc = "service " + as.Spec.Service.Namespace + "/" + as.Spec.Service.Name
				}
				out = append(out, fmt.Sprintf("APIService %s (%s) is not available: %s: %s", as.Name, svc, c.Reason, c.Message))
				names = append(names, as.Name)
				why[as.Name] = c.Reason + " (" + c.Message + ")"
			}
		}
		return nil
	})
	return out, names, why, err
}

// builtinFinalizers are removed by Kubernetes itself.
var builtinFinalizers = map[string]string{
	"kubernetes":                                 "the namespace controller (kube-controller-manager)",
	"kubernetes.io/pvc-protection":               "the pvc-protection controller (kube-controller-manager)",
	"kubernetes.io/pv-protection":                "the pv-protection controller (kube-controller-manager)",
	"kubernetes.io/pv-controller":                "the PersistentVolume controller (kube-controller-manager)",
	"foregroundDeletion":                         "the garbage collector (kube-controller-manager)",
	"orphan":                                     "the garbage collector (kube-controller-manager)",
	"customresourcecleanup.apiextensions.k8s.io": "kube-apiserver's CRD cleanup",
	"batch.kubernetes.io/job-tracking":           "the Job controller (kube-controller-manager)",
}

// servers says, for each blocker's finalizers, whether anything in the
// cluster still serves it: a built-in controller, or a workload (Deployment,
// StatefulSet, DaemonSet) whose name or images mention the finalizer's
// domain. The second is a heuristic and says so.
func servers(ctx context.Context, store etcdscan.Store, registry string, blockers []Blocker) error {
	if len(blockers) == 0 {
		return nil
	}
	type workload struct{ name, text string }
	var workloads []workload
	// Webhooks may be what removes a finalizer too; their configurations are
	// matched by name.
	for _, p := range []string{catalog.StoragePrefix("admissionregistration.k8s.io", "mutatingwebhookconfigurations", false), catalog.StoragePrefix("admissionregistration.k8s.io", "validatingwebhookconfigurations", false)} {
		start := registry + p + "/"
		err := store.Range(ctx, start, etcdscan.PrefixEnd(start), true, func(kv *mvccpb.KeyValue) error {
			name := string(kv.Key[len(start):])
			workloads = append(workloads, workload{name: "webhook configuration " + name, text: strings.ToLower(name)})
			return nil
		})
		if err != nil {
			return err
		}
	}
	crdGroups := map[string][]string{}
	start := registry + "apiextensions.k8s.io/customresourcedefinitions/"
	err := store.Range(ctx, start, etcdscan.PrefixEnd(start), true, func(kv *mvccpb.KeyValue) error {
		if r, ok := catalog.CustomFromCRDName(string(kv.Key[len(start):])); ok {
			crdGroups[r.Group] = append(crdGroups[r.Group], r.GroupResource())
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, p := range []string{"deployments", "statefulsets", "daemonsets"} {
		start := registry + p + "/"
		err := store.Range(ctx, start, etcdscan.PrefixEnd(start), false, func(kv *mvccpb.KeyValue) error {
			obj, _, err := decode.Typed(kv.Value)
			if err != nil {
				return nil
			}
			var spec corev1.PodTemplateSpec
			var name string
			switch o := obj.(type) {
			case *appsv1.Deployment:
				spec, name = o.Spec.Template, "Deployment "+o.Namespace+"/"+o.Name
			case *appsv1.StatefulSet:
				spec, name = o.Spec.Template, "StatefulSet "+o.Namespace+"/"+o.Name
			case *appsv1.DaemonSet:
				spec, name = o.Spec.Template, "DaemonSet "+o.Namespace+"/"+o.Name
			default:
				return nil
			}
			text := name
			for _, c := range spec.Spec.Containers {
				text += " " + c.Image
			}
			workloads = append(workloads, workload{name: name, text: strings.ToLower(text)})
			return nil
		})
		if err != nil {
			return err
		}
	}
	for i := range blockers {
		b := &blockers[i]
		b.Served, b.Remove, b.Keep, b.Irreversible = nil, nil, nil, nil
		for _, f := range b.Finalizers {
			if who, ok := builtinFinalizers[f]; ok {
				b.Served = append(b.Served, f+": served by "+who+"; left in place")
				b.Keep = append(b.Keep, f)
				continue
			}
			b.Remove = append(b.Remove, f)
			if e, ok := impact.StripEffect(f); ok {
				e.Objects = append(e.Objects, b.Key)
				b.Irreversible = append(b.Irreversible, e)
			}
			domain, _, _ := strings.Cut(f, "/")
			word, _, _ := strings.Cut(domain, ".")
			var by []string
			for _, w := range workloads {
				if word != "" && strings.Contains(w.text, strings.ToLower(word)) {
					by = append(by, w.name)
				}
			}
			sort.Strings(by)
			crds := ""
			if names := crdGroups[domain]; len(names) > 0 {
				crds = " (the CRDs of its group are still there: " + strings.Join(names, ", ") + ")"
			}
			if len(by) == 0 {
				b.Served = append(b.Served, f+": nothing in the cluster seems to serve it (no Deployment, StatefulSet, DaemonSet or webhook mentions "+word+"): its operator is gone"+crds)
			} else {
				b.Served = append(b.Served, f+": perhaps served by "+strings.Join(by, ", ")+" (a workload that mentions "+word+"); check it is running before removing the finalizer")
			}
		}
	}
	return nil
}

// decide writes the next action and, when acting would make ghosts or fail,
// the refusal.
func (a *Analysis) decide() {
	switch {
	case !a.Exists && a.Remaining == 0:
		a.Next = a.Target + " is gone and nothing of it is left in etcd: nothing to do"
	case !a.Exists:
		a.Next = fmt.Sprintf("%s is gone but %s left in etcd: %s; see `regghost scan` and `regghost purge`", a.Target, plural.Verb(a.Remaining, "key", "of it is", "of it are"), plural.Pick(a.Remaining, "it is a ghost", "they are ghosts"))
		a.Refusal = "the " + a.Target + " no longer exists"
	case !a.Terminating:
		a.Next = a.Target + " is not being deleted: nothing is stuck"
		a.Refusal = a.Target + " is not terminating"
	case len(a.Unavailable) > 0 && a.followDangling():
	case len(a.Unavailable) > 0:
		a.Next = "make these APIs available again, or delete their APIService if nothing serves it any more; the namespace controller needs every API to delete a namespace: " + strings.Join(a.Unavailable, "; ")
		a.Refusal = "an API the namespace controller needs is unavailable (" + a.Unavailable[0] + "); removing finalizers would not finish the deletion"
	case len(a.Unreadable) > 0:
		a.Next = fmt.Sprintf("%s encrypted and the API server could not read %s, so what holds the deletion is not known: %s; let the API server answer (check --kubeconfig)", plural.Verb(len(a.Unreadable), "remaining value", "is", "are"), plural.Them(len(a.Unreadable)), strings.Join(a.Unreadable, ", "))
		a.Refusal = "some remaining objects cannot be read here"
	case a.removable() > 0 && len(a.refusedEffects()) > 0:
		refused := a.refusedEffects()
		var says, ways []string
		for _, e := range refused {
			says = append(says, e.Summary+" ("+e.Objects[len(e.Objects)-1]+")")
			ways = appendOnce(ways, e.WayOut)
		}
		a.Next = "bring back the controller that serves these finalizers and let it finish, or accept what removing them leaves behind (" + strings.Join(ways, ", ") + "): " + strings.Join(says, "; ")
		a.Refusal = refused[0].Summary + "; a restore cannot undo it (accept with " + refused[0].WayOut + ")"
	case a.removable() > 0 && a.missingVersion() != "":
		a.Next = "the API server does not serve " + a.missingVersion() + ", so its finalizers cannot be removed through it: make it served (or check --kubeconfig)"
		a.Refusal = a.missingVersion() + " is not served by the API server"
	case a.removable() > 0:
		a.Next = fmt.Sprintf("remove the finalizers nobody serves from the %s that %s it (`regghost unstick ... --confirm` does it through the API server, backed up), then the deletion finishes", plural.Of(a.removable(), "object"), plural.Pick(a.removable(), "holds", "hold"))
	case len(a.Blockers) > 0:
		a.Next = "only Kubernetes' own finalizers hold it: their controller (see SERVED BY) is not running or failing; fix it rather than remove them"
		a.Refusal = "only Kubernetes' own finalizers hold it"
	case a.Remaining > 0:
		a.Next = fmt.Sprintf("%s without finalizers %s: the controller that deletes %s (kube-controller-manager's namespace controller) is not running or failing; check it", plural.Of(a.Remaining, "object"), plural.Pick(a.Remaining, "remains", "remain"), plural.Them(a.Remaining))
		a.Refusal = "nothing holds it with finalizers: the deleting controller is not doing its work"
	default:
		a.Next = "nothing is left under it; its own finalizers [" + strings.Join(a.Finalizers, ", ") + "] are waiting for their controller (kube-controller-manager's namespace controller, or kube-apiserver for CRDs)"
		a.Refusal = "no object holds it: its own finalizer's controller is not running"
	}
}

// downHere says whether name is an unavailable APIService of this analysis
// whose Service is down.
func (a *Analysis) downHere(name string) bool {
	for _, r := range a.Dangling {
		if r.Name == name && r.State == etcdscan.DanglingDown {
			return true
		}
	}
	return false
}

// refuseUnknownUnavailable refuses when --delete-unavailable-apiservice
// names an APIService that is not one whose Service is down and that holds
// this deletion: nothing else is deleted that way.
func (a *Analysis) refuseUnknownUnavailable() {
	for _, n := range a.DeleteUnavailable {
		if !a.downHere(n) {
			a.Next = DeleteUnavailableFlag + " " + n + " names no APIService whose Service is down and that holds this deletion"
			if len(a.UnavailableNames) > 0 {
				a.Next += " (unavailable: " + strings.Join(a.UnavailableNames, ", ") + ")"
			} else {
				// Deleted since (unsticking another namespace), or back.
				a.Next += " (no APIService is unavailable now: run it again without the flag)"
			}
			a.Refusal, a.DeleteAPIServices, a.Nudge = a.Next, nil, nil
			return
		}
	}
}

// followDangling decides a deletion held by unavailable APIServices that
// all dangle; false leaves the decision to the general case.
func (a *Analysis) followDangling() bool {
	next, refusal, ok := a.danglingDecision()
	if ok {
		a.Next, a.Refusal = next, refusal
	}
	return ok
}

func appendOnce(xs []string, x string) []string {
	for _, y := range xs {
		if y == x {
			return xs
		}
	}
	return append(xs, x)
}

// Removable counts the blockers with finalizers to remove.
func (a *Analysis) Removable() int { return a.removable() }

// removable counts the blockers with finalizers to remove.
func (a *Analysis) removable() int {
	n := 0
	for _, b := range a.Blockers {
		if len(b.Remove) > 0 {
			n++
		}
	}
	return n
}

// missingVersion names a blocker's resource the API server does not serve
// (no version to patch it through), if any.
func (a *Analysis) missingVersion() string {
	for _, b := range a.Blockers {
		if len(b.Remove) > 0 && b.Resource.Version == "" {
			return b.Resource.GroupResource()
		}
	}
	return ""
}

// asCRD reads a CustomResourceDefinition stored at v1 or v1beta1 (what
// unstick needs of it, finalizers and conditions, is the same in both).
func asCRD(obj runtime.Object) (*apiextensionsv1.CustomResourceDefinition, error) {
	if crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition); ok {
		return crd, nil
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("holds a %T, not a CustomResourceDefinition", obj)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, crd); err != nil || crd.Name == "" {
		return nil, fmt.Errorf("holds a %T, not a CustomResourceDefinition", obj)
	}
	return crd, nil
}
