package impact

import (
	"fmt"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"github.com/regghost/regghost/pkg/etcdscan"
)

// CallersFail is the effect of deleting a Service that a live admission
// webhook with failurePolicy Fail, or an APIService, calls: every request
// the webhook matches fails (a namespace deletion waits on the APIService's
// discovery) until the caller is fixed. It is the order the purge must not
// take; regghost dangling fixes the caller once the Service is gone.
const CallersFail Kind = "callers-fail"

// caller is a live object that calls a Service.
type caller struct {
	// what names it ("validating webhook x.example.com of
	// ValidatingWebhookConfiguration guard").
	what string
	// ns and name are the Service it calls.
	ns, name string
}

// callers are the prefixes whose objects call Services.
var callerPrefixes = []string{"validatingwebhookconfigurations/", "mutatingwebhookconfigurations/", "apiregistration.k8s.io/apiservices/"}

// loadCallers reads every webhook configuration and APIService once; one
// nobody can read is remembered as a caller of unknown Services.
func (a *analysis) loadCallers() error {
	if a.callersLoaded {
		return nil
	}
	a.callersLoaded = true
	for _, p := range callerPrefixes {
		start := a.registry + p
		err := a.store.Range(a.ctx, start, etcdscan.PrefixEnd(start), false, func(kv *mvccpb.KeyValue) error {
			key := string(kv.Key)
			if a.targets[key] {
				// Deleted in the same purge: it calls nobody after.
				return nil
			}
			obj, err := a.reader.Read(a.ctx, key, kv.Value)
			if err != nil {
				a.unreadableCallers = append(a.unreadableCallers, key+" ("+oneLine(err)+")")
				return nil
			}
			callers, ok := callersOf(obj)
			if !ok {
				a.unreadableCallers = append(a.unreadableCallers, key+" (read, but not as a webhook configuration or APIService)")
				return nil
			}
			a.callers = append(a.callers, callers...)
			return nil
		})
		if err != nil {
			return fmt.Errorf("read the callers of Services under %s: %w", start, err)
		}
	}
	return nil
}

// callersOf lists the Services an object calls and fails closed without:
// webhooks whose failurePolicy is Fail (the v1 default), and APIServices.
// ok is false for an object of another type (one only read untyped).
func callersOf(obj runtime.Object) (_ []caller, ok bool) {
	var out []caller
	fails := func(p *admissionregistrationv1.FailurePolicyType) bool {
		return p == nil || *p == admissionregistrationv1.Fail
	}
	switch o := obj.(type) {
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		for _, w := range o.Webhooks {
			if s := w.ClientConfig.Service; s != nil && fails(w.FailurePolicy) {
				out = append(out, caller{what: "validating webhook " + w.Name + " of ValidatingWebhookConfiguration " + o.Name, ns: s.Namespace, name: s.Name})
			}
		}
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		for _, w := range o.Webhooks {
			if s := w.ClientConfig.Service; s != nil && fails(w.FailurePolicy) {
				out = append(out, caller{what: "mutating webhook " + w.Name + " of MutatingWebhookConfiguration " + o.Name, ns: s.Namespace, name: s.Name})
			}
		}
	case *apiregistrationv1.APIService:
		if s := o.Spec.Service; s != nil {
			out = append(out, caller{what: "APIService " + o.Name, ns: s.Namespace, name: s.Name})
		}
	default:
		return nil, false
	}
	return out, true
}

// serviceCallers adds the effect of deleting Service ns/name that live
// callers fail closed without; a caller that cannot be read makes it
// unknown (refused), as an unreadable volume makes a claim.
func (a *analysis) serviceCallers(key, ns, name string) error {
	if err := a.loadCallers(); err != nil {
		return err
	}
	var who []string
	for _, c := range a.callers {
		if c.ns == ns && c.name == name {
			who = append(who, c.what)
		}
	}
	if len(who) > 0 {
		a.add(key, Effect{Kind: CallersFail, Irreversible: true, WayOut: AcceptImpactFlag + " " + string(CallersFail), Objects: who,
			Summary: "called by " + strings.Join(who, ", ") + ": once it is gone every request they serve fails (fix or delete them first, or run regghost dangling --confirm right after)"})
		return nil
	}
	if len(a.unreadableCallers) > 0 {
		a.add(key, Effect{Kind: Unknown, Irreversible: true, WayOut: AcceptImpactFlag + " " + string(Unknown), Objects: a.unreadableCallers,
			Summary: "whether a webhook or APIService calls it cannot be told: " + strings.Join(a.unreadableCallers, ", ") + " cannot be read here"})
	}
	return nil
}
