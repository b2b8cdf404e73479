package dangling

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/catalog"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/objread"
)

func TestFind(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	ctx := context.Background()
	ready := `{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"name":"live-x","namespace":"ops","labels":{"kubernetes.io/service-name":"live"}},"addressType":"IPv4","endpoints":[{"addresses":["10.0.0.9"],"conditions":{"ready":true}}]}`
	for k, v := range map[string]string{
		"/registry/namespaces/default":         `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"default"}}`,
		"/registry/namespaces/ops":             `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ops"}}`,
		"/registry/services/specs/ops/live":    `{"apiVersion":"v1","kind":"Service","metadata":{"name":"live","namespace":"ops"}}`,
		"/registry/services/specs/ops/idle":    `{"apiVersion":"v1","kind":"Service","metadata":{"name":"idle","namespace":"ops"}}`,
		"/registry/endpointslices/ops/live-x":  ready,
		"/registry/serviceaccounts/ops/runner": `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"runner","namespace":"ops"}}`,
		// The namespace kb-system was force-deleted: everything below points into it.
		"/registry/apiregistration.k8s.io/apiservices/v1beta1.webhook.cert-manager.io": `{"apiVersion":"apiregistration.k8s.io/v1","kind":"APIService","metadata":{"name":"v1beta1.webhook.cert-manager.io","annotations":{"meta.helm.sh/release-name":"cert-manager"}},"spec":{"group":"webhook.cert-manager.io","version":"v1beta1","groupPriorityMinimum":100,"versionPriority":10,"service":{"namespace":"kb-system","name":"webhook"}}}`,
		// Down, not gone: the Service is there with no ready endpoint.
		"/registry/apiregistration.k8s.io/apiservices/v1beta1.metrics.k8s.io": `{"apiVersion":"apiregistration.k8s.io/v1","kind":"APIService","metadata":{"name":"v1beta1.metrics.k8s.io"},"spec":{"group":"metrics.k8s.io","version":"v1beta1","groupPriorityMinimum":100,"versionPriority":10,"service":{"namespace":"ops","name":"idle"}}}`,
		// Its Service has a ready endpoint, but the aggregator's check of
		// the backend fails (FailedDiscoveryCheck): down as well.
		"/registry/apiregistration.k8s.io/apiservices/v1beta1.custom.metrics.k8s.io": `{"apiVersion":"apiregistration.k8s.io/v1","kind":"APIService","metadata":{"name":"v1beta1.custom.metrics.k8s.io"},"spec":{"group":"custom.metrics.k8s.io","version":"v1beta1","groupPriorityMinimum":100,"versionPriority":10,"service":{"namespace":"ops","name":"live"}},"status":{"conditions":[{"type":"Available","status":"False","reason":"FailedDiscoveryCheck","message":"failing or missing response from https://10.0.0.5:443"}]}}`,
		"/registry/apiregistration.k8s.io/apiservices/v1.apps":                       `{"apiVersion":"apiregistration.k8s.io/v1","kind":"APIService","metadata":{"name":"v1.apps"},"spec":{"group":"apps","version":"v1","groupPriorityMinimum":100,"versionPriority":10}}`,
		"/registry/validatingwebhookconfigurations/policy": `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingWebhookConfiguration","metadata":{"name":"policy"},"webhooks":[
			{"name":"gone.example.com","clientConfig":{"service":{"namespace":"kb-system","name":"hook"}},"sideEffects":"None","admissionReviewVersions":["v1"]},
			{"name":"live.example.com","clientConfig":{"service":{"namespace":"ops","name":"live"}},"sideEffects":"None","admissionReviewVersions":["v1"]}]}`,
		// Both webhooks gone, into two namespaces: whole only when both are
		// in scope.
		"/registry/validatingwebhookconfigurations/split": `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingWebhookConfiguration","metadata":{"name":"split"},"webhooks":[
			{"name":"a.example.com","clientConfig":{"service":{"namespace":"kb-system","name":"a"}},"sideEffects":"None","admissionReviewVersions":["v1"]},
			{"name":"b.example.com","clientConfig":{"service":{"namespace":"gone-2","name":"b"}},"sideEffects":"None","admissionReviewVersions":["v1"]}]}`,
		"/registry/mutatingwebhookconfigurations/inject": `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"MutatingWebhookConfiguration","metadata":{"name":"inject"},"webhooks":[
			{"name":"inject.example.com","failurePolicy":"Ignore","clientConfig":{"service":{"namespace":"kb-system","name":"inject"}},"sideEffects":"None","admissionReviewVersions":["v1"]}]}`,
		"/registry/clusterrolebindings/kb-admin": `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"kb-admin"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"cluster-admin"},"subjects":[{"kind":"ServiceAccount","namespace":"kb-system","name":"controller"},{"kind":"ServiceAccount","namespace":"ops","name":"runner"}]}`,
		// A binding in ops to an account of the gone kb-system: both
		// namespaces' business.
		"/registry/rolebindings/ops/cross": `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"cross","namespace":"ops"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"reader"},"subjects":[{"kind":"ServiceAccount","namespace":"kb-system","name":"controller"}]}`,
		"/registry/rolebindings/ops/read":  `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"read","namespace":"ops"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"reader"},"subjects":[{"kind":"ServiceAccount","name":"deleted"}]}`,
		// kube-apiserver's bootstrap policy: ServiceAccounts that do not exist
		// by design (kube-controller-manager without
		// --use-service-account-credentials, CoreDNS as coredns) are no
		// finding; a subject a user added to such a binding still is, and
		// is removed, never the binding.
		"/registry/namespaces/kube-system":                                         `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"kube-system"}}`,
		"/registry/clusterrolebindings/system:controller:attachdetach-controller":  `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"system:controller:attachdetach-controller","labels":{"kubernetes.io/bootstrapping":"rbac-defaults"},"annotations":{"rbac.authorization.kubernetes.io/autoupdate":"true"}},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"system:controller:attachdetach-controller"},"subjects":[{"kind":"ServiceAccount","namespace":"kube-system","name":"attachdetach-controller"}]}`,
		"/registry/clusterrolebindings/system:kube-dns":                            `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"system:kube-dns","labels":{"kubernetes.io/bootstrapping":"rbac-defaults"},"annotations":{"rbac.authorization.kubernetes.io/autoupdate":"true"}},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"system:kube-dns"},"subjects":[{"kind":"ServiceAccount","namespace":"kube-system","name":"kube-dns"},{"kind":"ServiceAccount","namespace":"ops","name":"dns-helper"}]}`,
		"/registry/rolebindings/kube-system/system::leader-locking-kube-scheduler": `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"system::leader-locking-kube-scheduler","namespace":"kube-system","labels":{"kubernetes.io/bootstrapping":"rbac-defaults"},"annotations":{"rbac.authorization.kubernetes.io/autoupdate":"true"}},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"system::leader-locking-kube-scheduler"},"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"system:kube-scheduler"},{"kind":"ServiceAccount","namespace":"kube-system","name":"kube-scheduler"},{"kind":"ServiceAccount","namespace":"kube-system","name":"leader-election-controller"}]}`,
		// Dressed as the policy (its label, autoupdate, a system:controller:
		// name) but granting cluster-admin to an account nobody has: the
		// release never wrote it, so it is a finding like any other.
		"/registry/clusterrolebindings/system:controller:backdoor": `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"system:controller:backdoor","labels":{"kubernetes.io/bootstrapping":"rbac-defaults"},"annotations":{"rbac.authorization.kubernetes.io/autoupdate":"true"}},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"cluster-admin"},"subjects":[{"kind":"ServiceAccount","namespace":"kube-system","name":"backdoor"}]}`,
		// Reconciliation turned off (autoupdate false): the user owns it.
		"/registry/clusterrolebindings/system:controller:route-controller": `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"system:controller:route-controller","labels":{"kubernetes.io/bootstrapping":"rbac-defaults"},"annotations":{"rbac.authorization.kubernetes.io/autoupdate":"false"}},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"system:controller:route-controller"},"subjects":[{"kind":"ServiceAccount","namespace":"kube-system","name":"route-controller"}]}`,
		// A user's own subject added to a bootstrap binding, in kube-system:
		// not the policy's, so found (creating kube-system/tiller again
		// would hold cluster-admin); the binding is edited, never deleted.
		"/registry/clusterrolebindings/cluster-admin": `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"cluster-admin","labels":{"kubernetes.io/bootstrapping":"rbac-defaults"},"annotations":{"rbac.authorization.kubernetes.io/autoupdate":"true"}},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"cluster-admin"},"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"Group","name":"system:masters"},{"kind":"ServiceAccount","namespace":"kube-system","name":"tiller"}]}`,
		// A user's own binding to a kube-system account deleted later.
		"/registry/rolebindings/kube-system/backup-reader": `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"backup-reader","namespace":"kube-system"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"reader"},"subjects":[{"kind":"ServiceAccount","name":"backup"}]}`,
		"/registry/persistentvolumes/pv-data":              `{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"pv-data"},"spec":{"persistentVolumeReclaimPolicy":"Retain","claimRef":{"namespace":"kb-system","name":"data","uid":"u1"}},"status":{"phase":"Released"}}`,
	} {
		if _, err := cli.Put(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	store, err := etcdscan.NewEtcdStore(ctx, cli, 100)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		namespace string
		want      []string // key field state fix-substring
		// whole are the objects the plan deletes whole (every flag
		// accepted); the others it fixes lose only their gone entries.
		whole []string
		// byDesign are the bootstrap policy's references shown apart.
		byDesign []string
	}{
		{"", []string{
			"apiregistration.k8s.io/apiservices/v1beta1.custom.metrics.k8s.io spec.service down",
			"apiregistration.k8s.io/apiservices/v1beta1.metrics.k8s.io spec.service down none: bring service ops/idle back",
			"apiregistration.k8s.io/apiservices/v1beta1.webhook.cert-manager.io spec.service gone delete APIService v1beta1.webhook.cert-manager.io",
			"clusterrolebindings/cluster-admin subjects[1] gone remove subject serviceaccount kube-system/tiller",
			"clusterrolebindings/kb-admin subjects[0] gone remove subject serviceaccount kb-system/controller",
			"clusterrolebindings/system:controller:backdoor subjects[0] gone remove subject serviceaccount kube-system/backdoor",
			"clusterrolebindings/system:controller:route-controller subjects[0] gone remove subject serviceaccount kube-system/route-controller",
			"clusterrolebindings/system:kube-dns subjects[1] gone remove subject serviceaccount ops/dns-helper",
			"mutatingwebhookconfigurations/inject webhooks[inject.example.com].clientConfig.service gone delete MutatingWebhookConfiguration inject",
			"persistentvolumes/pv-data spec.claimRef gone none automatic",
			"rolebindings/kube-system/backup-reader subjects[0] gone delete RoleBinding backup-reader",
			"rolebindings/kube-system/system::leader-locking-kube-scheduler subjects[2] gone remove subject serviceaccount kube-system/leader-election-controller",
			"rolebindings/ops/cross subjects[0] gone delete RoleBinding cross",
			"rolebindings/ops/read subjects[0] gone delete RoleBinding read",
			"validatingwebhookconfigurations/policy webhooks[gone.example.com].clientConfig.service gone remove webhook gone.example.com",
			"validatingwebhookconfigurations/split webhooks[a.example.com].clientConfig.service gone delete ValidatingWebhookConfiguration split",
			"validatingwebhookconfigurations/split webhooks[b.example.com].clientConfig.service gone delete ValidatingWebhookConfiguration split",
		}, []string{"apiregistration.k8s.io/apiservices/v1beta1.webhook.cert-manager.io", "mutatingwebhookconfigurations/inject",
			"rolebindings/kube-system/backup-reader", "rolebindings/ops/cross", "rolebindings/ops/read", "validatingwebhookconfigurations/split"},
			[]string{
				"clusterrolebindings/system:controller:attachdetach-controller subjects[0]",
				"clusterrolebindings/system:kube-dns subjects[0]",
				"rolebindings/kube-system/system::leader-locking-kube-scheduler subjects[1]",
			}},
		{"kb-system", []string{
			"apiregistration.k8s.io/apiservices/v1beta1.webhook.cert-manager.io spec.service gone",
			"clusterrolebindings/kb-admin subjects[0] gone",
			"mutatingwebhookconfigurations/inject webhooks[inject.example.com].clientConfig.service gone",
			"persistentvolumes/pv-data spec.claimRef gone",
			"rolebindings/ops/cross subjects[0] gone delete RoleBinding cross",
			"validatingwebhookconfigurations/policy webhooks[gone.example.com].clientConfig.service gone",
			// Its sibling into gone-2 is outside -n: it keeps it.
			"validatingwebhookconfigurations/split webhooks[a.example.com].clientConfig.service gone remove webhook a.example.com",
		}, []string{"apiregistration.k8s.io/apiservices/v1beta1.webhook.cert-manager.io", "mutatingwebhookconfigurations/inject", "rolebindings/ops/cross"}, nil},
		// -n ops: the references held in ops (its bindings, whatever they
		// point at) and those pointing into it.
		{"ops", []string{
			"apiregistration.k8s.io/apiservices/v1beta1.custom.metrics.k8s.io spec.service down",
			"apiregistration.k8s.io/apiservices/v1beta1.metrics.k8s.io spec.service down",
			"clusterrolebindings/system:kube-dns subjects[1] gone remove subject serviceaccount ops/dns-helper",
			"rolebindings/ops/cross subjects[0] gone delete RoleBinding cross",
			"rolebindings/ops/read subjects[0] gone delete RoleBinding read",
		}, []string{"rolebindings/ops/cross", "rolebindings/ops/read"}, nil},
	}
	for _, tt := range tests {
		t.Run("namespace "+tt.namespace, func(t *testing.T) {
			found, err := Find(ctx, store, Options{Registry: "/registry/", Namespace: tt.namespace, Reader: &objread.Reader{Registry: "/registry/"}})
			if err != nil || len(found.Unreadable) > 0 {
				t.Fatalf("find: %v, unreadable %v", err, found)
			}
			refs := found.Refs
			var byDesign []string
			for _, r := range found.ByDesign {
				byDesign = append(byDesign, strings.TrimPrefix(r.Key, "/registry/")+" "+r.Field)
				if r.State != etcdscan.DanglingGone || !strings.HasPrefix(r.Fix, "none: kube-apiserver's bootstrap policy") {
					t.Errorf("%s %s: state %s, fix %q", r.Key, r.Field, r.State, r.Fix)
				}
			}
			if fmt.Sprint(byDesign) != fmt.Sprint(tt.byDesign) {
				t.Errorf("by design: %v, want %v", byDesign, tt.byDesign)
			}
			if len(refs) != len(tt.want) {
				t.Fatalf("got %d references, want %d: %+v", len(refs), len(tt.want), refs)
			}
			for i, r := range refs {
				got := strings.TrimPrefix(r.Key, "/registry/") + " " + r.Field + " " + string(r.State) + " " + r.Fix
				if !strings.HasPrefix(got, tt.want[i]) {
					t.Errorf("reference %d: %q, want it to start %q", i, got, tt.want[i])
				}
				if r.State == etcdscan.DanglingGone && !r.SingleWitness {
					t.Errorf("%s: not single-witness without the API server", r.Key)
				}
			}
			fixes, _ := PlanFixes(refs, PlanOptions{AcceptManaged: true, AcceptSingleWitness: true})
			var whole []string
			for _, f := range fixes {
				if f.Delete {
					whole = append(whole, strings.TrimPrefix(f.Key, "/registry/"))
				}
			}
			if fmt.Sprint(whole) != fmt.Sprint(tt.whole) {
				t.Errorf("deleted whole: %v, want %v", whole, tt.whole)
			}
			if tt.namespace == "" && (len(refs[2].ManagedBy) != 1 || !strings.Contains(refs[2].ManagedBy[0], "Helm release cert-manager")) {
				t.Errorf("managed by: %v", refs[2].ManagedBy)
			}
		})
	}
}

// served is an API server that serves exactly the objects it holds, named
// "resource/namespace/name" ("namespaces//shop", "services/shop/api").
type served map[string]bool

func (s served) Get(_ context.Context, r catalog.Resource, ns, name string) (*metav1.PartialObjectMetadata, error) {
	if s[r.Resource+"/"+ns+"/"+name] {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: r.Resource}, name)
}

// TestTargetIsJudgedOnItself: a target is gone only when its own key is
// missing and the API server does not find it itself; a namespace's absence
// alone never makes it gone. A target stored in a namespace that is gone is
// a ghost: reported as such, and never fixed by dangling.
func TestTargetIsJudgedOnItself(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	ctx := context.Background()
	// What points into namespace shop: an APIService and a webhook at the
	// Service shop/api, a binding at the account shop/runner, a volume at
	// the claim shop/data.
	referrers := map[string]string{
		"apiregistration.k8s.io/apiservices/v1.x.example.com": `{"apiVersion":"apiregistration.k8s.io/v1","kind":"APIService","metadata":{"name":"v1.x.example.com"},"spec":{"group":"x.example.com","version":"v1","groupPriorityMinimum":100,"versionPriority":10,"service":{"namespace":"shop","name":"api"}}}`,
		"validatingwebhookconfigurations/hooks":               `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingWebhookConfiguration","metadata":{"name":"hooks"},"webhooks":[{"name":"check.example.com","clientConfig":{"service":{"namespace":"shop","name":"api"}},"sideEffects":"None","admissionReviewVersions":["v1"]}]}`,
		"clusterrolebindings/runner":                          `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"runner"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"edit"},"subjects":[{"kind":"ServiceAccount","namespace":"shop","name":"runner"}]}`,
		"persistentvolumes/pv-data":                           `{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"pv-data"},"spec":{"persistentVolumeReclaimPolicy":"Retain","claimRef":{"namespace":"shop","name":"data"}},"status":{"phase":"Bound"}}`,
	}
	targets := map[string]string{
		"services/specs/shop/api":          `{"apiVersion":"v1","kind":"Service","metadata":{"name":"api","namespace":"shop"}}`,
		"serviceaccounts/shop/runner":      `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"runner","namespace":"shop"}}`,
		"persistentvolumeclaims/shop/data": `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data","namespace":"shop"}}`,
		"endpointslices/shop/api-1":        `{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"name":"api-1","namespace":"shop","labels":{"kubernetes.io/service-name":"api"}},"addressType":"IPv4","endpoints":[{"addresses":["10.0.0.9"],"conditions":{"ready":true}}]}`,
		"namespaces/shop":                  `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"shop"}}`,
	}
	servesTargets := served{"services/shop/api": true, "serviceaccounts/shop/runner": true, "persistentvolumeclaims/shop/data": true}
	servesAll := served{"namespaces//shop": true, "services/shop/api": true, "serviceaccounts/shop/runner": true, "persistentvolumeclaims/shop/data": true}
	const (
		api   = "apiregistration.k8s.io/apiservices/v1.x.example.com spec.service"
		hook  = "validatingwebhookconfigurations/hooks webhooks[check.example.com].clientConfig.service"
		crb   = "clusterrolebindings/runner subjects[0]"
		pv    = "persistentvolumes/pv-data spec.claimRef"
		ghost = string(etcdscan.DanglingGhost)
		gone  = string(etcdscan.DanglingGone)
	)
	tests := []struct {
		name string
		// stored are the target keys etcd holds (besides the referrers).
		stored []string
		api    Getter
		// want is each reference's state, with " single" when the API
		// server did not confirm it; fixes are the keys a fix is planned
		// for (with every flag accepted).
		want  map[string]string
		fixes []string
	}{
		{"namespace key force-deleted, targets stored and served: ghosts, never gone",
			[]string{"services/specs/shop/api", "serviceaccounts/shop/runner", "persistentvolumeclaims/shop/data", "endpointslices/shop/api-1"}, servesTargets,
			map[string]string{api: ghost, hook: ghost, crb: ghost, pv: ghost}, nil},
		{"namespace key force-deleted, targets stored, no API server: ghosts on etcd's word",
			[]string{"services/specs/shop/api", "serviceaccounts/shop/runner", "persistentvolumeclaims/shop/data"}, nil,
			map[string]string{api: ghost + " single", hook: ghost + " single", crb: ghost + " single", pv: ghost + " single"}, nil},
		{"namespace and targets gone, the API server answers 404 for each target",
			nil, served{},
			map[string]string{api: gone, hook: gone, crb: gone, pv: gone},
			[]string{"apiregistration.k8s.io/apiservices/v1.x.example.com", "clusterrolebindings/runner", "validatingwebhookconfigurations/hooks"}},
		{"namespace and target keys gone, but the API server serves the targets: nothing is said",
			nil, servesTargets, map[string]string{}, nil},
		{"the API server finds the namespace but not the targets: the targets' own 404 decides",
			nil, served{"namespaces//shop": true},
			map[string]string{api: gone, hook: gone, crb: gone, pv: gone},
			[]string{"apiregistration.k8s.io/apiservices/v1.x.example.com", "clusterrolebindings/runner", "validatingwebhookconfigurations/hooks"}},
		{"the API server finds the namespace, targets stored: live",
			[]string{"services/specs/shop/api", "serviceaccounts/shop/runner", "persistentvolumeclaims/shop/data", "endpointslices/shop/api-1"}, servesAll,
			map[string]string{}, nil},
		{"namespace stored, target keys gone, the API server serves them: nothing is said",
			[]string{"namespaces/shop"}, servesAll, map[string]string{}, nil},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := fmt.Sprintf("/case%d/", i)
			for k, v := range referrers {
				if _, err := cli.Put(ctx, reg+k, v); err != nil {
					t.Fatal(err)
				}
			}
			for _, k := range tt.stored {
				if _, err := cli.Put(ctx, reg+k, targets[k]); err != nil {
					t.Fatal(err)
				}
			}
			store, err := etcdscan.NewEtcdStore(ctx, cli, 100)
			if err != nil {
				t.Fatal(err)
			}
			found, err := Find(ctx, store, Options{Registry: reg, Reader: &objread.Reader{Registry: reg}, API: tt.api})
			var refs []etcdscan.DanglingRef
			var unreadable []string
			if found != nil {
				refs, unreadable = found.Refs, found.Unreadable
			}
			if err != nil || len(unreadable) > 0 {
				t.Fatalf("find: %v, unreadable %v", err, unreadable)
			}
			got := map[string]string{}
			for _, r := range refs {
				v := string(r.State)
				if r.SingleWitness {
					v += " single"
				}
				got[strings.TrimPrefix(r.Key, reg)+" "+r.Field] = v
				if r.State == etcdscan.DanglingGhost && (strings.Contains(r.Why, "does not exist") || !strings.Contains(r.Fix, "purge")) {
					t.Errorf("%s: a ghost target said to be missing (%q), or its fix not left to the purge (%q)", r.Key, r.Why, r.Fix)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("references:\n got %v\nwant %v", got, tt.want)
			}
			fixes, refused := PlanFixes(refs, PlanOptions{AcceptManaged: true, AcceptSingleWitness: true})
			var keys []string
			for _, f := range fixes {
				keys = append(keys, strings.TrimPrefix(f.Key, reg))
			}
			if fmt.Sprint(keys) != fmt.Sprint(tt.fixes) || len(refused) > 0 {
				t.Errorf("fixes %v (refused %v), want %v", keys, refused, tt.fixes)
			}
		})
	}
}

func TestUnavailableSince(t *testing.T) {
	cond := func(status, at string) map[string]any {
		return map[string]any{"status": map[string]any{"conditions": []any{
			map[string]any{"type": "Available", "status": status, "lastTransitionTime": at, "reason": "ServiceNotFound"},
		}}}
	}
	tests := []struct {
		name string
		obj  map[string]any
		want string
	}{
		{"unavailable", cond("False", "2026-11-30T08:00:00Z"), "2026-11-30T08:00:00Z"},
		{"available", cond("True", "2026-11-30T08:00:00Z"), ""},
		{"no status", map[string]any{}, ""},
		{"unreadable time", cond("False", "yesterday"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if s := unavailableSince(tt.obj); s != nil {
				got = s.UTC().Format(time.RFC3339)
			}
			if got != tt.want {
				t.Errorf("unavailableSince = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestPlanFixesDeletesWholeOnlyWhenEveryEntryIsTaken: a webhook
// configuration or a binding is deleted whole only when each of its entries
// is a gone reference the plan takes; a sibling that is refused, down, a
// ghost or outside the references given (-n) keeps it, and only the gone
// entries the plan takes are removed.
func TestPlanFixesDeletesWholeOnlyWhenEveryEntryIsTaken(t *testing.T) {
	const vwc, crb = "/registry/validatingwebhookconfigurations/policy", "/registry/clusterrolebindings/grant"
	hook := func(name, ns string, state etcdscan.DanglingState, entries int) etcdscan.DanglingRef {
		return etcdscan.DanglingRef{Key: vwc, Kind: "ValidatingWebhookConfiguration", Name: "policy", ModRevision: 7, Field: "webhooks[" + name + "].clientConfig.service",
			Target: "service " + ns + "/hook", TargetNamespace: ns, State: state, Entries: entries,
			// Find's text once said delete for a whole object: the plan no
			// longer takes its word.
			Fix: "delete ValidatingWebhookConfiguration policy through the API server"}
	}
	subject := func(i int, ns string, entries int) etcdscan.DanglingRef {
		return etcdscan.DanglingRef{Key: crb, Kind: "ClusterRoleBinding", Name: "grant", ModRevision: 9, Field: fmt.Sprintf("subjects[%d]", i),
			Target: "serviceaccount " + ns + "/runner", TargetNamespace: ns, State: etcdscan.DanglingGone, Entries: entries}
	}
	single := func(r etcdscan.DanglingRef) etcdscan.DanglingRef { r.SingleWitness = true; return r }
	gone, down, ghost := etcdscan.DanglingGone, etcdscan.DanglingDown, etcdscan.DanglingGhost
	tests := []struct {
		name string
		refs []etcdscan.DanglingRef
		o    PlanOptions
		// want is each fix ("delete KEY" or "remove A,B from KEY"), then
		// the refused targets.
		want, refused []string
	}{
		{"every webhook gone and taken: deleted whole",
			[]etcdscan.DanglingRef{hook("a.example.com", "kb", gone, 2), hook("b.example.com", "kb", gone, 2)}, PlanOptions{},
			[]string{"delete " + vwc}, nil},
		{"one webhook gone, its sibling refused: only the gone one is removed",
			[]etcdscan.DanglingRef{hook("a.example.com", "kb", gone, 2), single(hook("b.example.com", "kb", gone, 2))}, PlanOptions{},
			[]string{"remove a.example.com from " + vwc}, []string{"service kb/hook"}},
		{"the refused sibling accepted: deleted whole",
			[]etcdscan.DanglingRef{hook("a.example.com", "kb", gone, 2), single(hook("b.example.com", "kb", gone, 2))}, PlanOptions{AcceptSingleWitness: true},
			[]string{"delete " + vwc}, nil},
		{"the sibling is outside -n (not given): only the gone one in scope is removed",
			[]etcdscan.DanglingRef{hook("a.example.com", "kb", gone, 2)}, PlanOptions{},
			[]string{"remove a.example.com from " + vwc}, nil},
		{"the sibling is down: only the gone one is removed",
			[]etcdscan.DanglingRef{hook("a.example.com", "kb", gone, 2), hook("b.example.com", "ops", down, 2)}, PlanOptions{},
			[]string{"remove a.example.com from " + vwc}, nil},
		{"the sibling is a ghost: only the gone one is removed",
			[]etcdscan.DanglingRef{hook("a.example.com", "kb", gone, 2), hook("b.example.com", "old", ghost, 2)}, PlanOptions{},
			[]string{"remove a.example.com from " + vwc}, nil},
		{"how many webhooks it holds is not known: only removals",
			[]etcdscan.DanglingRef{hook("a.example.com", "kb", gone, 0)}, PlanOptions{},
			[]string{"remove a.example.com from " + vwc}, nil},
		{"a ghost alone: nothing",
			[]etcdscan.DanglingRef{hook("a.example.com", "old", ghost, 1)}, PlanOptions{AcceptSingleWitness: true, AcceptManaged: true},
			nil, nil},
		{"every subject gone: the binding is deleted",
			[]etcdscan.DanglingRef{subject(0, "ci", 2), subject(1, "qa", 2)}, PlanOptions{},
			[]string{"delete " + crb}, nil},
		{"one subject refused: the other is removed, the binding stays",
			[]etcdscan.DanglingRef{subject(0, "ci", 2), single(subject(1, "qa", 2))}, PlanOptions{},
			[]string{"remove ci/runner from " + crb}, []string{"serviceaccount qa/runner"}},
		{"a live subject besides (three entries, two gone): both gone ones removed",
			[]etcdscan.DanglingRef{subject(0, "ci", 3), subject(1, "qa", 3)}, PlanOptions{},
			[]string{"remove ci/runner,qa/runner from " + crb}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fixes, refused := PlanFixes(tt.refs, tt.o)
			var got, gotRefused []string
			for _, f := range fixes {
				if f.Delete {
					got = append(got, "delete "+f.Key)
				} else {
					got = append(got, "remove "+strings.Join(f.Remove, ",")+" from "+f.Key)
				}
			}
			for _, r := range refused {
				gotRefused = append(gotRefused, r.Ref.Target)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) || fmt.Sprint(gotRefused) != fmt.Sprint(tt.refused) {
				t.Errorf("fixes %q refused %q, want %q refused %q", got, gotRefused, tt.want, tt.refused)
			}
		})
	}
}

// TestPolicySubject: only the exact (binding, role, subject) triples of the
// release's bootstrap policy are missing by design; a binding dressed as
// one (its name, a system: role, a -controller subject) is judged as any.
func TestPolicySubject(t *testing.T) {
	crb := func(name, role string) BindingRef {
		return BindingRef{Kind: "ClusterRoleBinding", Name: name, RoleKind: "ClusterRole", Role: role}
	}
	leader := BindingRef{Kind: "RoleBinding", Namespace: "kube-system", Name: "system::leader-locking-kube-controller-manager",
		RoleKind: "Role", Role: "system::leader-locking-kube-controller-manager"}
	for _, tt := range []struct {
		what, version string
		b             BindingRef
		ns, name      string
		want          bool
	}{
		{"a controller's own binding", "v1.37.2", crb("system:controller:attachdetach-controller", "system:controller:attachdetach-controller"), "kube-system", "attachdetach-controller", true},
		{"any patch of a known minor", "v1.36.0-gke.3", crb("system:controller:route-controller", "system:controller:route-controller"), "kube-system", "route-controller", true},
		{"no server asked: any release's", "", crb("system:kube-dns", "system:kube-dns"), "kube-system", "kube-dns", true},
		{"leader locking, a second subject of the policy", "v1.34.4", leader, "kube-system", "leader-election-controller", true},
		{"a backdoor dressed as a controller's binding", "v1.37.2", crb("system:controller:backdoor", "cluster-admin"), "kube-system", "backdoor", false},
		{"a controller's name granting cluster-admin", "v1.37.2", crb("system:controller:attachdetach-controller", "cluster-admin"), "kube-system", "attachdetach-controller", false},
		{"a made-up system: role and a -controller subject", "v1.37.2", crb("system:deploy", "system:deploy"), "kube-system", "deploy-controller", false},
		{"a subject added to a policy binding", "v1.37.2", crb("system:controller:attachdetach-controller", "system:controller:attachdetach-controller"), "kube-system", "tiller", false},
		{"the policy's name, another namespace", "v1.37.2", crb("system:controller:attachdetach-controller", "system:controller:attachdetach-controller"), "ops", "attachdetach-controller", false},
		{"a RoleBinding where the policy has a ClusterRoleBinding", "v1.37.2", BindingRef{Kind: "RoleBinding", Namespace: "kube-system", Name: "system:kube-dns", RoleKind: "ClusterRole", Role: "system:kube-dns"}, "kube-system", "kube-dns", false},
		{"cluster-admin", "v1.37.2", crb("cluster-admin", "cluster-admin"), "kube-system", "tiller", false},
		// A release's policy holds the bindings of the releases before it
		// (never deleted on upgrade), not those of later ones.
		{"a later release's binding on an older server", "v1.34.4", crb("system:controller:podgroup-protection-controller", "system:controller:podgroup-protection-controller"), "kube-system", "podgroup-protection-controller", false},
		{"the same on its own release", "v1.37.2", crb("system:controller:podgroup-protection-controller", "system:controller:podgroup-protection-controller"), "kube-system", "podgroup-protection-controller", true},
		{"a release newer than the table", "v1.40.0", crb("system:controller:podgroup-protection-controller", "system:controller:podgroup-protection-controller"), "kube-system", "podgroup-protection-controller", true},
		// Behind a feature gate (every gate on when the table is made).
		{"a feature-gated controller's binding", "v1.34.4", crb("system:controller:storage-version-garbage-collector", "system:controller:storage-version-garbage-collector"), "kube-system", "storage-version-garbage-collector", true},
	} {
		if got := PolicySubject(tt.version, tt.b, tt.ns, tt.name); got != tt.want {
			t.Errorf("%s: PolicySubject(%q, %+v, %s/%s) = %v, want %v", tt.what, tt.version, tt.b, tt.ns, tt.name, got, tt.want)
		}
	}
}

// TestMajorMinor: the release a server version names.
func TestMajorMinor(t *testing.T) {
	for in, want := range map[string]string{"v1.37.2": "v1.37", "1.36.0-gke.1": "v1.36", "v1.34": "v1.34", "": "", "v0.0.0-master+$Format:%H$": "", "vx.y": "", "v1": ""} {
		if got := majorMinor(in); got != want {
			t.Errorf("majorMinor(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestPolicyPrincipal: a User or Group is the policy's only as the exact
// (binding, role, subject) of the release's table, as a ServiceAccount is.
func TestPolicyPrincipal(t *testing.T) {
	crb := func(name string) BindingRef {
		return BindingRef{Kind: "ClusterRoleBinding", Name: name, RoleKind: "ClusterRole", Role: name}
	}
	rb := func(name, role string) BindingRef {
		return BindingRef{Kind: "RoleBinding", Namespace: "kube-system", Name: name, RoleKind: "Role", Role: role}
	}
	scheduler := rb("system::leader-locking-kube-scheduler", "system::leader-locking-kube-scheduler")
	for _, tt := range []struct {
		what, version string
		b             BindingRef
		kind, name    string
		want          bool
	}{
		{"the scheduler's User on its leader-locking binding", "v1.37.2", scheduler, "User", "system:kube-scheduler", true},
		{"system:masters on cluster-admin", "v1.36.3", crb("cluster-admin"), "Group", "system:masters", true},
		{"both groups of system:public-info-viewer", "", crb("system:public-info-viewer"), "Group", "system:unauthenticated", true},
		{"a role not named as its binding", "v1.34.4", rb("system::extension-apiserver-authentication-reader", "extension-apiserver-authentication-reader"), "User", "system:kube-controller-manager", true},
		{"a feature-gated binding (every gate on)", "v1.34.4", crb("system:cluster-trust-bundle-discovery"), "Group", "system:serviceaccounts", true},
		{"a release newer than the table", "v1.40.1", crb("system:node-proxier"), "User", "system:kube-proxy", true},
		{"a Group added to a policy binding", "v1.37.2", scheduler, "Group", "system:authenticated", false},
		{"a User added to a policy binding", "v1.37.2", crb("cluster-admin"), "User", "mallory", false},
		{"the policy's User on another of its bindings", "v1.37.2", rb("system::leader-locking-kube-controller-manager", "system::leader-locking-kube-controller-manager"), "User", "system:kube-scheduler", false},
		{"a User where the policy has a Group of that name", "v1.37.2", crb("system:monitoring"), "User", "system:monitoring", false},
		{"the policy's Group on its binding, another role", "v1.37.2", BindingRef{Kind: "ClusterRoleBinding", Name: "system:basic-user", RoleKind: "ClusterRole", Role: "cluster-admin"}, "Group", "system:authenticated", false},
		{"system:nodes on system:node (none since the Node authorizer)", "v1.37.2", crb("system:node"), "Group", "system:nodes", false},
		{"a binding the policy never writes", "v1.37.2", crb("system:controller:backdoor"), "Group", "system:authenticated", false},
		{"a ServiceAccount is not a principal", "v1.37.2", crb("system:kube-dns"), "ServiceAccount", "kube-dns", false},
	} {
		if got := PolicyPrincipal(tt.version, tt.b, tt.kind, tt.name); got != tt.want {
			t.Errorf("%s: PolicyPrincipal(%q, %+v, %s %s) = %v, want %v", tt.what, tt.version, tt.b, tt.kind, tt.name, got, tt.want)
		}
	}
}

// TestPolicyBindingSubjects: a policy binding's gone ServiceAccount is by
// design only while the binding grants nothing the policy does not write
// and no reference reports: a User, a Group or a ServiceAccount that exists
// added to it (or to a binding forged under its name) makes its gone
// subjects findings that name that grant, never a by-design entry.
func TestPolicyBindingSubjects(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	ctx := context.Background()
	const meta = `"labels":{"kubernetes.io/bootstrapping":"rbac-defaults"},"annotations":{"rbac.authorization.kubernetes.io/autoupdate":"true"}`
	crb := func(name, role, subjects string) string {
		return `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"` + name + `",` + meta + `},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"` + role + `"},"subjects":[` + subjects + `]}`
	}
	rb := func(name, subjects string) string {
		return `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"` + name + `","namespace":"kube-system",` + meta + `},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"` + name + `"},"subjects":[` + subjects + `]}`
	}
	sa := func(ns, name string) string {
		return `{"kind":"ServiceAccount","namespace":"` + ns + `","name":"` + name + `"}`
	}
	principal := func(kind, name string) string {
		return `{"apiGroup":"rbac.authorization.k8s.io","kind":"` + kind + `","name":"` + name + `"}`
	}
	const (
		attach = "system:controller:attachdetach-controller"
		kcm    = "system::leader-locking-kube-controller-manager"
		sched  = "system::leader-locking-kube-scheduler"
	)
	for i, tt := range []struct {
		what, key, value string
		// byDesign and found are the subjects fields each holds;
		// besides is what the findings say the binding also grants.
		byDesign, found []string
		besides         string
	}{
		{"exactly as the policy writes it", "clusterrolebindings/" + attach, crb(attach, attach, sa("kube-system", "attachdetach-controller")),
			[]string{"subjects[0]"}, nil, ""},
		{"the policy's User beside its ServiceAccounts", "rolebindings/kube-system/" + kcm,
			rb(kcm, principal("User", "system:kube-controller-manager")+","+sa("kube-system", "kube-controller-manager")+","+sa("kube-system", "leader-election-controller")),
			[]string{"subjects[1]", "subjects[2]"}, nil, ""},
		{"a Group added", "clusterrolebindings/" + attach, crb(attach, attach, sa("kube-system", "attachdetach-controller")+","+principal("Group", "system:authenticated")),
			nil, []string{"subjects[0]"}, "group system:authenticated"},
		{"a User added", "rolebindings/kube-system/" + sched, rb(sched, principal("User", "system:kube-scheduler")+","+sa("kube-system", "kube-scheduler")+","+principal("User", "mallory")),
			nil, []string{"subjects[1]"}, "user mallory"},
		{"the policy's User on another of its bindings", "rolebindings/kube-system/" + kcm,
			rb(kcm, principal("User", "system:kube-scheduler")+","+sa("kube-system", "kube-controller-manager")+","+sa("kube-system", "leader-election-controller")),
			nil, []string{"subjects[1]", "subjects[2]"}, "user system:kube-scheduler"},
		{"a ServiceAccount that exists added", "clusterrolebindings/" + attach, crb(attach, attach, sa("kube-system", "attachdetach-controller")+","+sa("ops", "runner")),
			nil, []string{"subjects[0]"}, "serviceaccount ops/runner"},
		// A gone ServiceAccount added is a finding itself: the binding is
		// shown, its policy subject stays by design (as before).
		{"a gone ServiceAccount added", "clusterrolebindings/" + attach, crb(attach, attach, sa("kube-system", "attachdetach-controller")+","+sa("ops", "gone")),
			[]string{"subjects[0]"}, []string{"subjects[1]"}, ""},
		{"a Group on a binding forged under another role", "clusterrolebindings/" + attach, crb(attach, "cluster-admin", sa("kube-system", "attachdetach-controller")+","+principal("Group", "system:masters")),
			nil, []string{"subjects[0]"}, "group system:masters"},
	} {
		t.Run(tt.what, func(t *testing.T) {
			reg := fmt.Sprintf("/case%d/registry/", i)
			for k, v := range map[string]string{
				"namespaces/kube-system":     `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"kube-system"}}`,
				"namespaces/ops":             `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ops"}}`,
				"serviceaccounts/ops/runner": `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"runner","namespace":"ops"}}`,
				tt.key:                       tt.value,
			} {
				if _, err := cli.Put(ctx, reg+k, v); err != nil {
					t.Fatal(err)
				}
			}
			store, err := etcdscan.NewEtcdStore(ctx, cli, 100)
			if err != nil {
				t.Fatal(err)
			}
			found, err := Find(ctx, store, Options{Registry: reg, Reader: &objread.Reader{Registry: reg}, ServerVersion: "v1.37.2"})
			if err != nil || len(found.Unreadable) > 0 {
				t.Fatalf("find: %v, unreadable %v", err, found)
			}
			var byDesign, got []string
			for _, r := range found.ByDesign {
				byDesign = append(byDesign, r.Field)
			}
			for _, r := range found.Refs {
				got = append(got, r.Field)
				if !r.KeepObject {
					t.Errorf("%s: a policy binding's subject may delete the binding", r.Field)
				}
				if tt.besides != "" && (!strings.Contains(r.Consequence, "also grants") || !strings.Contains(r.Consequence, tt.besides) || !strings.Contains(r.Fix, "never removes "+tt.besides)) {
					t.Errorf("%s: consequence %q, fix %q: the grant to %s not named", r.Field, r.Consequence, r.Fix, tt.besides)
				}
				if tt.besides == "" && strings.Contains(r.Consequence, "also grants") {
					t.Errorf("%s: consequence %q names a grant the policy writes", r.Field, r.Consequence)
				}
			}
			if fmt.Sprint(byDesign) != fmt.Sprint(tt.byDesign) || fmt.Sprint(got) != fmt.Sprint(tt.found) {
				t.Errorf("by design %v, found %v; want by design %v, found %v", byDesign, got, tt.byDesign, tt.found)
			}
			if fixes, _ := PlanFixes(found.Refs, PlanOptions{AcceptSingleWitness: true}); len(found.Refs) > 0 && (len(fixes) != 1 || fixes[0].Delete) {
				t.Errorf("fixes %+v: want the binding edited, never deleted", fixes)
			}
		})
	}
}

// TestPolicyTableIsAsMakeCatalogWritesIt: the embedded table reads back as
// `make catalog` writes it (e2e's TestBootstrapPolicyTable re-encodes the
// whole Policy), so its principals survive the rewrite of a release's
// bindings, and every release holds each.
func TestPolicyTableIsAsMakeCatalogWritesIt(t *testing.T) {
	b, err := json.MarshalIndent(PolicyTable(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if string(append(b, '\n')) != string(policyJSON) {
		t.Error("bootstrap_policy.json is not as json.MarshalIndent of its Policy writes it")
	}
	p := PolicyTable()
	for r := range p.Releases {
		if len(p.Principals[r]) == 0 {
			t.Errorf("release %s has no principals", r)
		}
	}
}

// TestUnfixed: the gone references no fix takes, no refusal names, or
// whose fix did not end deleted or rewritten are what a confirmed run
// leaves.
func TestUnfixed(t *testing.T) {
	gone := func(key, field string) etcdscan.DanglingRef {
		return etcdscan.DanglingRef{Key: key, Field: field, State: etcdscan.DanglingGone}
	}
	refs := []etcdscan.DanglingRef{gone("a", "x"), gone("b", "x"), gone("pv", "claimRef"), {Key: "down", Field: "spec.service", State: etcdscan.DanglingDown}}
	fa, fb := Fix{Key: "a", Refs: refs[:1]}, Fix{Key: "b", Refs: refs[1:2]}
	for _, tt := range []struct {
		name    string
		fixes   []Fix
		refused []Refusal
		results []etcdwrite.Result
		want    int
	}{
		{"every gone one planned but the volume's", []Fix{fa, fb}, nil, nil, 1},
		{"one refused", []Fix{fa}, []Refusal{{Ref: refs[1]}}, nil, 1},
		{"both fixed", []Fix{fa, fb}, nil, []etcdwrite.Result{{Key: "a", Outcome: etcdwrite.Deleted}, {Key: "b", Outcome: etcdwrite.Rewritten}}, 1},
		{"one still present", []Fix{fa, fb}, nil, []etcdwrite.Result{{Key: "a", Outcome: etcdwrite.Deleted}, {Key: "b", Outcome: etcdwrite.StillPresent}}, 2},
		{"a down one is never counted", []Fix{fa, fb, {Key: "down", Refs: refs[3:]}}, nil, nil, 1},
	} {
		if got := Unfixed(refs, tt.fixes, tt.refused, tt.results); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.want)
		}
	}
}
