// Package dangling finds what a force-deleted namespace leaves pointing into
// the void outside itself: APIServices and admission webhooks whose Service
// is gone (every namespace deletion and every matching request then fails),
// CRD conversion webhooks, RBAC bindings whose ServiceAccount subjects are
// gone (a namespace and account created again inherit the grant), and
// PersistentVolumes whose claim is gone. It tells gone (the Service, account
// or claim itself does not exist: its key is missing and the API server's GET
// of it answers 404; a dangling reference) from down (the Service exists with
// no ready endpoint: bring it back) and from a ghost target (stored and
// served, but its namespace is gone: the purge of that namespace is its fix),
// with two witnesses: etcd's keys and the API server.
package dangling

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/regghost/regghost/pkg/catalog"
	"github.com/regghost/regghost/pkg/etcdscan"
)

// Reader reads a stored object (*objread.Reader: as stored, decrypted, or
// through the API server).
type Reader interface {
	Read(ctx context.Context, key string, value []byte) (runtime.Object, error)
}

// Getter reads an object's metadata through the API server (*apiview.View).
type Getter interface {
	Get(ctx context.Context, r catalog.Resource, namespace, name string) (*metav1.PartialObjectMetadata, error)
}

// Options say where to look and who to ask.
type Options struct {
	// Registry is the registry prefix ("/registry/").
	Registry string
	// Namespace, when set, keeps only the references it concerns: held by
	// an object in it, or pointing into it.
	Namespace string
	// Reader reads the referring objects.
	Reader Reader
	// API is the second witness; nil when it cannot be asked.
	API Getter
	// ServerVersion is the API server's version, when it was asked: its
	// release's bootstrap policy is the one by design ("": every release
	// regghost knows).
	ServerVersion string
}

// finder holds what is known of the keyspace while references are checked.
type finder struct {
	ctx   context.Context
	store etcdscan.Store
	o     Options
	// namespaces are the namespace keys that exist.
	namespaces map[string]bool
	// answers caches the API server's answer per target.
	answers map[string]answer
	// ready caches whether a Service has a ready endpoint; unreadSlices
	// counts, per namespace, the EndpointSlices nobody here could read.
	ready        map[string]bool
	unreadSlices map[string]int
	out          []etcdscan.DanglingRef
	// byDesign are the references kube-apiserver's own objects hold by
	// design (ByDesign).
	byDesign []etcdscan.DanglingRef
	// unreadable are referring objects nobody here could read.
	unreadable []string
}

// Found is what Find found.
type Found struct {
	// Refs are the references whose target is gone, down or a ghost:
	// the findings.
	Refs []etcdscan.DanglingRef
	// ByDesign are references kube-apiserver's own bootstrap policy holds
	// to what never existed or comes and goes with a component (ByDesign):
	// shown where detail is asked for, never counted, never fixed.
	ByDesign []etcdscan.DanglingRef
	// Unreadable lists the referring objects nobody could read (they are
	// not judged).
	Unreadable []string
}

// answer is the API server's word on a target etcd says is gone.
type answer int

const (
	apiConfirms answer = iota
	apiContradicts
	apiNoEvidence
)

// Find walks the objects that point into namespaces and returns every
// reference whose target is gone or down, sorted by key, apart from those
// kube-apiserver's own objects hold by design, and the referring objects
// nobody could read.
func Find(ctx context.Context, store etcdscan.Store, o Options) (*Found, error) {
	f := &finder{ctx: ctx, store: store, o: o, namespaces: map[string]bool{}, answers: map[string]answer{}, ready: map[string]bool{}}
	start := o.Registry + "namespaces/"
	err := store.Range(ctx, start, etcdscan.PrefixEnd(start), true, func(kv *mvccpb.KeyValue) error {
		f.namespaces[string(kv.Key[len(start):])] = true
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read namespaces: %w", err)
	}
	// Each walked where kube-apiserver stores it: built-in groups under the
	// resource alone (validatingwebhookconfigurations/...), a few under
	// their group (apiregistration.k8s.io/apiservices/...).
	for _, w := range []struct {
		group, resource string
		fn              func(kv *mvccpb.KeyValue, obj map[string]any) error
	}{
		{"apiregistration.k8s.io", "apiservices", f.apiService},
		{"admissionregistration.k8s.io", "validatingwebhookconfigurations", f.webhooks("ValidatingWebhookConfiguration")},
		{"admissionregistration.k8s.io", "mutatingwebhookconfigurations", f.webhooks("MutatingWebhookConfiguration")},
		{"apiextensions.k8s.io", "customresourcedefinitions", f.conversion},
		{"rbac.authorization.k8s.io", "clusterrolebindings", f.binding("ClusterRoleBinding")},
		{"rbac.authorization.k8s.io", "rolebindings", f.binding("RoleBinding")},
		{"", "persistentvolumes", f.volume},
	} {
		if err := f.walk(catalog.StoragePrefix(w.group, w.resource, false)+"/", w.fn); err != nil {
			return nil, err
		}
	}
	for _, refs := range [][]etcdscan.DanglingRef{f.out, f.byDesign} {
		sort.SliceStable(refs, func(i, j int) bool { return refs[i].Key < refs[j].Key })
	}
	return &Found{Refs: f.out, ByDesign: f.byDesign, Unreadable: f.unreadable}, nil
}

// WithoutGhosts returns refs without the references into ghosts: what a
// caller that acts on gone or down verdicts (unstick) may follow. A ghost
// target is fixed by the purge of its namespace, never here.
func WithoutGhosts(refs []etcdscan.DanglingRef) []etcdscan.DanglingRef {
	var out []etcdscan.DanglingRef
	for _, r := range refs {
		if r.State != etcdscan.DanglingGhost {
			out = append(out, r)
		}
	}
	return out
}

// walk reads every object under a storage prefix and hands it, as a map,
// to fn.
func (f *finder) walk(prefix string, fn func(kv *mvccpb.KeyValue, obj map[string]any) error) error {
	start := f.o.Registry + prefix
	return f.store.Range(f.ctx, start, etcdscan.PrefixEnd(start), false, func(kv *mvccpb.KeyValue) error {
		obj, err := f.o.Reader.Read(f.ctx, string(kv.Key), kv.Value)
		if err != nil {
			f.unreadable = append(f.unreadable, string(kv.Key))
			return nil
		}
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			f.unreadable = append(f.unreadable, string(kv.Key))
			return nil
		}
		return fn(kv, u)
	})
}

// presence is what the witnesses say of a target.
type presence int

const (
	// isGone: its own key is missing in etcd, and the API server does not
	// find it either (or could not be asked). Its namespace's absence
	// alone never makes a target gone.
	isGone presence = iota
	// isThere: its key is in etcd, and so is its namespace (or the API
	// server finds the namespace).
	isThere
	// isGhost: its key is in etcd but its namespace is gone (no namespace
	// key, and the API server does not find the namespace): the API server
	// still serves it, and the purge of the ghost namespace removes it.
	isGhost
	// unknown: etcd could not be read, or the API server finds what etcd
	// lacks: nothing is said of it.
	unknown
)

// verdict is what the witnesses say of one target, and why.
type verdict struct {
	p   presence
	why string
	// single is set when the API server did not confirm it.
	single bool
}

// judge says whether the object ns/name of resource r is gone, there, or a
// ghost. Gone is decided on the target itself: its own key missing in etcd,
// and the API server's GET of it (single witness when that could not
// confirm it). A target whose key is stored in a namespace that is gone is
// a ghost, not gone: the API server still serves it.
func (f *finder) judge(r catalog.Resource, ns, name string) verdict {
	what := singular(r) + " " + ns + "/" + name
	key := etcdscan.ObjectKey(f.o.Registry, r.Prefix(), ns, name)
	kv, err := f.store.Get(f.ctx, key)
	switch {
	case err != nil:
		return verdict{p: unknown}
	case kv != nil && f.namespaces[ns]:
		return verdict{p: isThere}
	case kv != nil:
		nsAnswer := f.ask(namespacesResource, "", ns)
		if nsAnswer == apiContradicts {
			// The API server finds the namespace: a keyspace that holds
			// part of the cluster, or a namespace created since the read.
			return verdict{p: isThere}
		}
		why := fmt.Sprintf("%s is stored (%s) but its namespace %s is gone (no %snamespaces/%s key%s)", what, key, ns, f.o.Registry, ns, said(nsAnswer))
		switch f.ask(r, ns, name) {
		case apiContradicts:
			why += "; the API server still serves it: a ghost"
		case apiConfirms:
			why += "; the API server answers 404 for it: a ghost"
		default:
			why += ": a ghost (the API server could not be asked whether it serves it)"
		}
		return verdict{p: isGhost, why: why, single: nsAnswer != apiConfirms}
	}
	a := f.ask(r, ns, name)
	if a == apiContradicts {
		return verdict{p: unknown}
	}
	why := fmt.Sprintf("%s does not exist (no %s key", what, key)
	if !f.namespaces[ns] {
		why += fmt.Sprintf(", nor %snamespaces/%s", f.o.Registry, ns)
	}
	return verdict{p: isGone, why: why + ")" + said(a), single: a != apiConfirms}
}

// singular names one object of r ("service", "serviceaccount").
func singular(r catalog.Resource) string {
	if r.Resource == "persistentvolumeclaims" {
		return "claim"
	}
	return strings.TrimSuffix(r.Resource, "s")
}

// service says whether a Service is gone, a ghost or down, and why; ok is
// false when it is there and serving, or when the API server contradicts
// etcd.
func (f *finder) service(ns, name string) (state etcdscan.DanglingState, why string, single, ok bool) {
	v := f.judge(servicesResource, ns, name)
	switch v.p {
	case isGone:
		return etcdscan.DanglingGone, v.why, v.single, true
	case isGhost:
		return etcdscan.DanglingGhost, v.why, v.single, true
	case unknown:
		return "", "", false, false
	}
	ready, unread := f.hasReadyEndpoint(ns, name)
	if ready {
		return "", "", false, false
	}
	why = fmt.Sprintf("service %s/%s exists but has no ready endpoint", ns, name)
	if unread > 0 {
		why += fmt.Sprintf(" that can be read here (%d EndpointSlices of namespace %s cannot be)", unread, ns)
	}
	return etcdscan.DanglingDown, why, false, true
}

// targetState is the state of a reference to a target judged gone or a
// ghost; ok is false for any other verdict.
func targetState(v verdict) (state etcdscan.DanglingState, ok bool) {
	switch v.p {
	case isGone:
		return etcdscan.DanglingGone, true
	case isGhost:
		return etcdscan.DanglingGhost, true
	}
	return "", false
}

func said(a answer) string {
	switch a {
	case apiConfirms:
		return "; the API server answers 404"
	case apiNoEvidence:
		return "; the API server could not confirm it"
	}
	return ""
}

var (
	namespacesResource      = catalog.Resource{Version: "v1", Resource: "namespaces"}
	servicesResource        = catalog.Resource{Version: "v1", Resource: "services"}
	serviceAccountsResource = catalog.Resource{Version: "v1", Resource: "serviceaccounts"}
	claimsResource          = catalog.Resource{Version: "v1", Resource: "persistentvolumeclaims"}
)

// ask is the second witness: the API server's GET of what etcd says is gone.
func (f *finder) ask(r catalog.Resource, ns, name string) answer {
	id := r.Resource + "/" + ns + "/" + name
	if a, ok := f.answers[id]; ok {
		return a
	}
	a := apiNoEvidence
	if f.o.API != nil {
		_, err := f.o.API.Get(f.ctx, r, ns, name)
		switch {
		case err == nil:
			a = apiContradicts
		case apierrors.IsNotFound(err):
			a = apiConfirms
		}
	}
	f.answers[id] = a
	return a
}

// hasReadyEndpoint reads the Service's EndpointSlices; unread counts the
// slices of the namespace nobody here could read (one may hold a ready
// endpoint).
func (f *finder) hasReadyEndpoint(ns, name string) (ready bool, unread int) {
	id := ns + "/" + name
	if r, ok := f.ready[id]; ok {
		return r, f.unreadSlices[ns]
	}
	start := f.o.Registry + "endpointslices/" + ns + "/"
	err := f.store.Range(f.ctx, start, etcdscan.PrefixEnd(start), false, func(kv *mvccpb.KeyValue) error {
		obj, err := f.o.Reader.Read(f.ctx, string(kv.Key), kv.Value)
		if err != nil {
			unread++
			return nil
		}
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			unread++
			return nil
		}
		if svc, _, _ := unstructured.NestedString(u, "metadata", "labels", "kubernetes.io/service-name"); svc != name {
			return nil
		}
		eps, _, _ := unstructured.NestedSlice(u, "endpoints")
		for _, e := range eps {
			em, _ := e.(map[string]any)
			addrs, _, _ := unstructured.NestedStringSlice(em, "addresses")
			r, found, _ := unstructured.NestedBool(em, "conditions", "ready")
			if len(addrs) > 0 && (!found || r) {
				ready = true
			}
		}
		return nil
	})
	if err != nil {
		// Whether it has a ready endpoint is not known.
		unread++
	}
	f.ready[id] = ready
	if f.unreadSlices == nil {
		f.unreadSlices = map[string]int{}
	}
	f.unreadSlices[ns] = unread
	return ready, unread
}

// concerns says whether a reference of obj pointing into target is one of
// the namespace asked about: -n means what it means everywhere, the objects
// of that namespace, so a reference is in scope when the object holding it
// is in the namespace or when it points into it.
func (f *finder) concerns(obj map[string]any, target string) bool {
	if f.o.Namespace == "" || target == f.o.Namespace {
		return true
	}
	ns, _, _ := unstructured.NestedString(obj, "metadata", "namespace")
	return ns == f.o.Namespace
}

// whole says whether each of an object's n entries (webhooks, subjects) is
// a gone reference in refs that the namespace asked about concerns: only
// then may the object be deleted whole.
func (f *finder) whole(obj map[string]any, refs []etcdscan.DanglingRef, n int) bool {
	for _, r := range refs {
		if r.State != etcdscan.DanglingGone || !f.concerns(obj, r.TargetNamespace) {
			return false
		}
	}
	return n > 0 && len(refs) == n
}

// add records a reference when the namespace asked about concerns it.
func (f *finder) add(kv *mvccpb.KeyValue, obj map[string]any, d etcdscan.DanglingRef) {
	if !f.fill(kv, obj, &d) {
		return
	}
	switch d.State {
	case etcdscan.DanglingDown:
		d.Fix = "none: bring " + d.Target + " back (it exists; deleting what points at it would lose its configuration)"
	case etcdscan.DanglingGhost:
		d.Consequence = "none yet: " + d.Target + " is still stored and served; once namespace " + d.TargetNamespace + " is purged: " + d.Consequence
		d.Fix = "none here: the target is a ghost (its namespace " + d.TargetNamespace + " is gone); purge the namespace (regghost purge --namespace " + d.TargetNamespace + "), whose fix this is; dangling --confirm leaves it alone"
	}
	f.out = append(f.out, d)
}

// fill sets the referring object's fields of d; false when the namespace
// asked about does not concern it.
func (f *finder) fill(kv *mvccpb.KeyValue, obj map[string]any, d *etcdscan.DanglingRef) bool {
	if !f.concerns(obj, d.TargetNamespace) {
		return false
	}
	d.Key, d.ModRevision = string(kv.Key), kv.ModRevision
	d.Namespace, _, _ = unstructured.NestedString(obj, "metadata", "namespace")
	d.Name, _, _ = unstructured.NestedString(obj, "metadata", "name")
	d.ManagedBy = managers(obj)
	return true
}

// addByDesign records a reference kube-apiserver's own object holds by
// design (ByDesign): shown, never counted, never fixed.
func (f *finder) addByDesign(kv *mvccpb.KeyValue, obj map[string]any, d etcdscan.DanglingRef) {
	if !f.fill(kv, obj, &d) {
		return
	}
	d.Consequence = "none: " + d.Consequence
	d.Fix = "none: kube-apiserver's bootstrap policy names " + d.Target + " by design and puts the subject back (and the binding, if deleted) at its next start; the account exists when the component that uses it runs (kube-controller-manager's controllers with --use-service-account-credentials, kube-dns, a cloud provider)"
	f.byDesign = append(f.byDesign, d)
}

func str(obj map[string]any, path ...string) string {
	s, _, _ := unstructured.NestedString(obj, path...)
	return s
}

// apiService checks an APIService's service.
func (f *finder) apiService(kv *mvccpb.KeyValue, obj map[string]any) error {
	ns, name := str(obj, "spec", "service", "namespace"), str(obj, "spec", "service", "name")
	if name == "" {
		return nil
	}
	state, why, single, ok := f.service(ns, name)
	if !ok {
		// Its Service is there and has a ready endpoint, yet the
		// aggregator says it is unavailable (FailedDiscoveryCheck: the
		// backend answers nothing, or not TLS, or not this API): down as
		// well, as far as discovery goes.
		reason, msg, down := unavailable(obj)
		if !down || f.judge(servicesResource, ns, name).p != isThere {
			return nil
		}
		state, why = etcdscan.DanglingDown, fmt.Sprintf("service %s/%s has a ready endpoint, but the API server's check of it fails (%s: %s)", ns, name, reason, msg)
	}
	gv := str(obj, "spec", "group") + "/" + str(obj, "spec", "version")
	f.add(kv, obj, etcdscan.DanglingRef{Kind: "APIService", Field: "spec.service", Target: "service " + ns + "/" + name, TargetNamespace: ns, State: state, Why: why, SingleWitness: single,
		Consequence: "discovery of " + gv + " fails: every namespace deletion in the cluster hangs (NamespaceDeletionDiscoveryFailure) and the garbage collector stalls",
		Fix:         "delete APIService " + str(obj, "metadata", "name") + " through the API server", Since: unavailableSince(obj)})
	return nil
}

// unavailable is an APIService's Available condition when it is False.
func unavailable(obj map[string]any) (reason, message string, down bool) {
	conds, _, _ := unstructured.NestedSlice(obj, "status", "conditions")
	for _, c := range conds {
		cm, _ := c.(map[string]any)
		if str(cm, "type") == "Available" && str(cm, "status") == "False" {
			return str(cm, "reason"), str(cm, "message"), true
		}
	}
	return "", "", false
}

// unavailableSince is when an APIService's Available condition turned
// False (kube-aggregator's availability controller sets it when its Service
// or endpoints go), or nil.
func unavailableSince(obj map[string]any) *time.Time {
	conds, _, _ := unstructured.NestedSlice(obj, "status", "conditions")
	for _, c := range conds {
		cm, _ := c.(map[string]any)
		if str(cm, "type") != "Available" || str(cm, "status") != "False" {
			continue
		}
		t, err := time.Parse(time.RFC3339, str(cm, "lastTransitionTime"))
		if err != nil {
			return nil
		}
		return &t
	}
	return nil
}

// webhooks checks each webhook of an admission webhook configuration.
func (f *finder) webhooks(kind string) func(kv *mvccpb.KeyValue, obj map[string]any) error {
	return func(kv *mvccpb.KeyValue, obj map[string]any) error {
		hooks, _, _ := unstructured.NestedSlice(obj, "webhooks")
		var refs []etcdscan.DanglingRef
		for _, h := range hooks {
			hm, _ := h.(map[string]any)
			ns, name := str(hm, "clientConfig", "service", "namespace"), str(hm, "clientConfig", "service", "name")
			if name == "" {
				continue
			}
			state, why, single, ok := f.service(ns, name)
			if !ok {
				continue
			}
			policy := str(hm, "failurePolicy")
			if policy == "" {
				policy = "Fail"
			}
			consequence := "failurePolicy " + policy + ": every request it matches fails (failed calling webhook " + str(hm, "name") + ": service not found), the reinstall of its operator included"
			if policy == "Ignore" {
				consequence = "failurePolicy Ignore: every request it matches waits for the call to fail, then goes on unchecked"
			}
			refs = append(refs, etcdscan.DanglingRef{Kind: kind, Field: "webhooks[" + str(hm, "name") + "].clientConfig.service", Target: "service " + ns + "/" + name,
				TargetNamespace: ns, State: state, Why: why, SingleWitness: single, Consequence: consequence})
		}
		whole := f.whole(obj, refs, len(hooks))
		for _, r := range refs {
			r.Entries = len(hooks)
			r.Fix = "remove webhook " + strings.TrimSuffix(strings.TrimPrefix(r.Field, "webhooks["), "].clientConfig.service") + " from " + kind + " " + str(obj, "metadata", "name") + " through the API server (it keeps its other webhooks)"
			if whole {
				r.Fix = "delete " + kind + " " + str(obj, "metadata", "name") + " through the API server (none of its webhooks has a Service left)"
			}
			f.add(kv, obj, r)
		}
		return nil
	}
}

// conversion checks a CRD's conversion webhook.
func (f *finder) conversion(kv *mvccpb.KeyValue, obj map[string]any) error {
	if str(obj, "spec", "conversion", "strategy") != "Webhook" {
		return nil
	}
	ns, name := str(obj, "spec", "conversion", "webhook", "clientConfig", "service", "namespace"), str(obj, "spec", "conversion", "webhook", "clientConfig", "service", "name")
	if name == "" {
		return nil
	}
	state, why, single, ok := f.service(ns, name)
	if !ok {
		return nil
	}
	crd := str(obj, "metadata", "name")
	f.add(kv, obj, etcdscan.DanglingRef{Kind: "CustomResourceDefinition", Field: "spec.conversion.webhook.clientConfig.service", Target: "service " + ns + "/" + name, TargetNamespace: ns, State: state, Why: why, SingleWitness: single,
		Consequence: "every read of " + crd + " at a version other than the stored one fails, and so may its lists",
		Fix:         "none automatic: bring the conversion service back, or set spec.conversion.strategy None once every object is stored at the version clients read"})
	return nil
}

// binding checks a binding's ServiceAccount subjects.
//
// A gone ServiceAccount of kube-apiserver's bootstrap policy is by design
// only while the binding is the policy's as written: the exact (binding,
// role, subject) of the table, and no grant besides that the policy does not
// write and no reference here reports. Users and Groups never dangle (they
// are no stored object), and a ServiceAccount that exists does not either:
// one of those added to a policy binding (or to a binding forged under a
// policy binding's name; reconciliation keeps extra subjects) would
// otherwise stand behind a by-design entry nobody counts. Such a binding's
// gone subjects are judged as any binding's, and each says what else it
// grants.
func (f *finder) binding(kind string) func(kv *mvccpb.KeyValue, obj map[string]any) error {
	return func(kv *mvccpb.KeyValue, obj map[string]any) error {
		own := str(obj, "metadata", "namespace")
		if kind == "RoleBinding" && !f.namespaces[own] {
			// A RoleBinding in a gone namespace is a ghost itself (scan's
			// orphaned-namespace), not a reference into the void.
			return nil
		}
		subjects, _, _ := unstructured.NestedSlice(obj, "subjects")
		role := str(obj, "roleRef", "kind") + " " + str(obj, "roleRef", "name")
		policy, labelled, bindingName := BootstrapPolicy(obj), BootstrapLabelled(obj), str(obj, "metadata", "name")
		ref := BindingRef{Kind: kind, Namespace: own, Name: bindingName, RoleKind: str(obj, "roleRef", "kind"), Role: str(obj, "roleRef", "name")}
		disguised := ""
		if labelled && strings.HasPrefix(bindingName, "system:") && ref.Role != bindingName {
			disguised = "; the binding is dressed as kube-apiserver's bootstrap policy (" + BootstrappingLabel + "=" + BootstrappingRBACDefaults +
				", a system: name) but grants " + role + ", not the role of its name"
		}
		// Every ServiceAccount subject is judged first: whether one is
		// reported decides whether the others may be by design.
		type saSubject struct {
			i        int
			ns, name string
			v        verdict
			state    etcdscan.DanglingState
		}
		var sas []saSubject
		// unwritten are the grants the policy does not write on this
		// binding and no reference of it reports.
		var unwritten []string
		for i, s := range subjects {
			sm, _ := s.(map[string]any)
			sk, name := str(sm, "kind"), str(sm, "name")
			if sk != "ServiceAccount" {
				if policy && !PolicyPrincipal(f.o.ServerVersion, ref, sk, name) {
					unwritten = append(unwritten, strings.ToLower(sk)+" "+name)
				}
				continue
			}
			ns := str(sm, "namespace")
			if ns == "" {
				ns = own
			}
			v := f.judge(serviceAccountsResource, ns, name)
			state, ok := targetState(v)
			if ok {
				sas = append(sas, saSubject{i: i, ns: ns, name: name, v: v, state: state})
			} else if policy && !PolicySubject(f.o.ServerVersion, ref, ns, name) {
				unwritten = append(unwritten, "serviceaccount "+ns+"/"+name)
			}
		}
		besides := ""
		if len(unwritten) > 0 {
			besides = "; the binding also grants " + role + " to " + strings.Join(unwritten, ", ") +
				", which kube-apiserver's bootstrap policy does not write on it: not the policy's binding as written, so none of its subjects is by design"
		}
		var refs []etcdscan.DanglingRef
		for _, sa := range sas {
			ns, name := sa.ns, sa.name
			dr := etcdscan.DanglingRef{Kind: kind, Field: fmt.Sprintf("subjects[%d]", sa.i), Target: "serviceaccount " + ns + "/" + name, TargetNamespace: ns,
				State: sa.state, Why: sa.v.why, SingleWitness: sa.v.single,
				Consequence: "the grant stays: a ServiceAccount created again as " + ns + "/" + name + " silently holds " + role + disguised}
			if policy && sa.state == etcdscan.DanglingGone && len(unwritten) == 0 && PolicySubject(f.o.ServerVersion, ref, ns, name) {
				f.addByDesign(kv, obj, dr)
				continue
			}
			dr.Consequence += besides
			// kube-apiserver re-creates its own binding at its next start:
			// a user's subject is removed from it, the binding never
			// deleted.
			dr.KeepObject = labelled
			refs = append(refs, dr)
		}
		whole := !labelled && f.whole(obj, refs, len(subjects))
		for _, r := range refs {
			r.Entries = len(subjects)
			r.Fix = "remove subject " + r.Target + " from " + kind + " " + str(obj, "metadata", "name") + " through the API server"
			if whole {
				r.Fix = "delete " + kind + " " + str(obj, "metadata", "name") + " through the API server (no subject is left)"
			}
			if besides != "" {
				r.Fix += "; regghost never removes " + strings.Join(unwritten, ", ") + " (no dangling reference): check who added it"
			}
			f.add(kv, obj, r)
		}
		return nil
	}
}

// volume checks a PersistentVolume's claimRef.
func (f *finder) volume(kv *mvccpb.KeyValue, obj map[string]any) error {
	ns, name := str(obj, "spec", "claimRef", "namespace"), str(obj, "spec", "claimRef", "name")
	if name == "" {
		return nil
	}
	v := f.judge(claimsResource, ns, name)
	state, ok := targetState(v)
	if !ok {
		return nil
	}
	phase, policy := str(obj, "status", "phase"), str(obj, "spec", "persistentVolumeReclaimPolicy")
	consequence := "phase " + phase + ", reclaim policy " + policy + ": it stays (or goes) Released, and no new claim binds it until spec.claimRef is cleared by hand"
	if phase == "Bound" {
		consequence = "still Bound to a claim that is gone (reclaim policy " + policy + ")"
	}
	f.add(kv, obj, etcdscan.DanglingRef{Kind: "PersistentVolume", Field: "spec.claimRef", Target: "claim " + ns + "/" + name, TargetNamespace: ns, State: state, Why: v.why, SingleWitness: v.single,
		Consequence: consequence,
		Fix:         "none automatic (regghost never touches storage): check the data, then delete the PersistentVolume or clear its spec.claimRef"})
	return nil
}

// gitops are the labels and annotations by which a GitOps tool or Helm
// tracks an object, and what each means.
var gitops = []struct {
	path []string
	who  string
}{
	{[]string{"metadata", "annotations", "meta.helm.sh/release-name"}, "Helm release %s (the next helm upgrade re-creates it, or adopts a ghost with matching annotations)"},
	{[]string{"metadata", "annotations", "argocd.argoproj.io/tracking-id"}, "Argo CD application %s (re-created with selfHeal)"},
	{[]string{"metadata", "labels", "app.kubernetes.io/instance"}, "Argo CD (2.x tracking label) or Helm instance %s"},
	{[]string{"metadata", "labels", "kustomize.toolkit.fluxcd.io/name"}, "Flux Kustomization %s (re-applied every interval)"},
	{[]string{"metadata", "labels", "helm.toolkit.fluxcd.io/name"}, "Flux HelmRelease %s"},
}

// managers names who would re-create or adopt obj.
func managers(obj map[string]any) []string {
	var out []string
	for _, g := range gitops {
		if v := str(obj, g.path...); v != "" {
			if i := strings.IndexByte(v, ':'); i > 0 && strings.Contains(g.who, "Argo CD application") {
				v = v[:i]
			}
			out = append(out, fmt.Sprintf(g.who, v))
		}
	}
	return out
}
