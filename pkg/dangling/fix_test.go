package dangling

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/etcdwrite"
)

// TestApplyJudgesEachTargetAgainBeforeItsWrite: a Service or ServiceAccount
// created again between the plan and the write (through the API server, or
// only its key in etcd) stops the fix that would delete the configuration
// or the binding subject pointing at it; a fix whose targets are all still
// gone is made. Only the referrer's resourceVersion was compared before.
func TestApplyJudgesEachTargetAgainBeforeItsWrite(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	ctx := context.Background()
	obj := func(apiVersion, kind, ns, name string, rev int64, extra map[string]any) *unstructured.Unstructured {
		meta := map[string]any{"name": name}
		if ns != "" {
			meta["namespace"] = ns
		}
		if rev != 0 {
			meta["resourceVersion"] = fmt.Sprint(rev)
		}
		o := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": meta}
		for k, v := range extra {
			o[k] = v
		}
		return &unstructured.Unstructured{Object: o}
	}
	vwcGVR := fixable["ValidatingWebhookConfiguration"]
	crbGVR := fixable["ClusterRoleBinding"]
	tests := []struct {
		name string
		// kind is the referrer: a webhook configuration deleted whole,
		// or a binding losing its subjects.
		kind string
		// targets are what the fix points at; inAPI and inEtcd are the
		// ones that exist again when it is applied.
		targets       []string
		inAPI, inEtcd []string
		// single marks the references judged on etcd's word alone;
		// apiFails makes the API server answer 403 to a GET of a target.
		single, apiFails bool
		want             etcdwrite.Outcome
		why              string
		changed          bool
	}{
		{"the Service is served again: the configuration stays", "ValidatingWebhookConfiguration",
			[]string{"kb/hook"}, []string{"kb/hook"}, nil, false, false, etcdwrite.TargetNotGone, "service kb/hook exists again (the API server serves it)", false},
		{"the Service's key is stored again: the configuration stays", "ValidatingWebhookConfiguration",
			[]string{"kb/hook"}, nil, []string{"kb/hook"}, false, false, etcdwrite.TargetNotGone, "services/specs/kb/hook is stored", false},
		{"one of two Services is back: the whole fix is left alone", "ValidatingWebhookConfiguration",
			[]string{"kb/hook", "kb/other"}, []string{"kb/other"}, nil, false, false, etcdwrite.TargetNotGone, "service kb/other exists again", false},
		{"every Service still gone: the configuration is deleted", "ValidatingWebhookConfiguration",
			[]string{"kb/hook"}, nil, nil, false, false, "", "", true},
		{"the ServiceAccount is created again: the binding keeps its subject", "ClusterRoleBinding",
			[]string{"ci/builder"}, []string{"ci/builder"}, []string{"ci/builder"}, false, false, etcdwrite.TargetNotGone, "serviceaccount ci/builder exists again", false},
		{"the ServiceAccount still gone: the subject is removed", "ClusterRoleBinding",
			[]string{"ci/builder"}, nil, nil, false, false, etcdwrite.Rewritten, "removed ci/builder", true},
		{"an accepted single witness still gone in etcd: made", "ClusterRoleBinding",
			[]string{"ci/builder"}, nil, nil, true, false, etcdwrite.Rewritten, "removed ci/builder", true},
		{"an accepted single witness the API server still cannot confirm: made on etcd's word, as accepted", "ClusterRoleBinding",
			[]string{"ci/builder"}, nil, nil, true, true, etcdwrite.Rewritten, "removed ci/builder", true},
		{"confirmed by the API server when judged, not any more: left alone", "ClusterRoleBinding",
			[]string{"ci/builder"}, nil, nil, false, true, etcdwrite.TargetNotGone, "the API server cannot confirm again that serviceaccount ci/builder is gone", false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := fmt.Sprintf("/r%d/", i)
			name := fmt.Sprintf("referrer-%d", i)
			var key string
			var objs []runtime.Object
			var refs []etcdscan.DanglingRef
			switch tt.kind {
			case "ValidatingWebhookConfiguration":
				key = reg + "validatingwebhookconfigurations/" + name
				var hooks []any
				for j, tg := range tt.targets {
					ns, svc, _ := strings.Cut(tg, "/")
					hooks = append(hooks, map[string]any{"name": fmt.Sprintf("h%d.example.com", j), "clientConfig": map[string]any{"service": map[string]any{"namespace": ns, "name": svc}}})
					refs = append(refs, etcdscan.DanglingRef{Key: key, Kind: tt.kind, Name: name, Field: fmt.Sprintf("webhooks[h%d.example.com].clientConfig.service", j),
						Target: "service " + tg, TargetNamespace: ns, State: etcdscan.DanglingGone, SingleWitness: tt.single, Entries: len(tt.targets)})
				}
				objs = append(objs, obj("admissionregistration.k8s.io/v1", tt.kind, "", name, 0, map[string]any{"webhooks": hooks}))
				for _, tg := range tt.inAPI {
					ns, svc, _ := strings.Cut(tg, "/")
					objs = append(objs, obj("v1", "Service", ns, svc, 0, nil))
				}
				for _, tg := range tt.inEtcd {
					if _, err := cli.Put(ctx, reg+"services/specs/"+tg, "{}"); err != nil {
						t.Fatal(err)
					}
				}
			default:
				key = reg + "clusterrolebindings/" + name
				subjects := []any{map[string]any{"kind": "ServiceAccount", "namespace": "ops", "name": "runner"}}
				for j, tg := range tt.targets {
					ns, sa, _ := strings.Cut(tg, "/")
					subjects = append(subjects, map[string]any{"kind": "ServiceAccount", "namespace": ns, "name": sa})
					refs = append(refs, etcdscan.DanglingRef{Key: key, Kind: tt.kind, Name: name, Field: fmt.Sprintf("subjects[%d]", j+1),
						Target: "serviceaccount " + tg, TargetNamespace: ns, State: etcdscan.DanglingGone, SingleWitness: tt.single, Entries: len(subjects)})
				}
				objs = append(objs, obj("rbac.authorization.k8s.io/v1", tt.kind, "", name, 0, map[string]any{"subjects": subjects,
					"roleRef": map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"}}))
				for _, tg := range tt.inAPI {
					ns, sa, _ := strings.Cut(tg, "/")
					objs = append(objs, obj("v1", "ServiceAccount", ns, sa, 0, nil))
				}
				for _, tg := range tt.inEtcd {
					if _, err := cli.Put(ctx, reg+"serviceaccounts/"+tg, "{}"); err != nil {
						t.Fatal(err)
					}
				}
			}
			put, err := cli.Put(ctx, key, "{}")
			if err != nil {
				t.Fatal(err)
			}
			rev := put.Header.Revision
			objs[0].(*unstructured.Unstructured).SetResourceVersion(fmt.Sprint(rev))
			for j := range refs {
				refs[j].ModRevision = rev
			}
			fixes, refused := PlanFixes(refs, PlanOptions{AcceptSingleWitness: true})
			if len(fixes) != 1 || len(refused) != 0 {
				t.Fatalf("plan: %+v refused %+v", fixes, refused)
			}
			before := objs[0].(*unstructured.Unstructured).DeepCopy()
			dyn := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme(), objs...)
			if tt.apiFails {
				for _, r := range []string{"services", "serviceaccounts"} {
					dyn.PrependReactor("get", r, func(clienttesting.Action) (bool, runtime.Object, error) {
						return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: r}, "x", errors.New("no"))
					})
				}
			}
			res, err := Apply(ctx, fixes, FixOptions{Client: cli, Dynamic: dyn, BackupRoot: t.TempDir(), Registry: reg, Scope: "test"})
			if res == nil || len(res.Results) != 1 {
				t.Fatalf("apply: %+v, %v", res, err)
			}
			got := res.Results[0]
			if tt.want == etcdwrite.TargetNotGone {
				if got.Outcome != etcdwrite.TargetNotGone || !strings.Contains(got.Detail, tt.why) || err == nil {
					t.Errorf("outcome %s %q (error %v), want %s %q and an error", got.Outcome, got.Detail, err, etcdwrite.TargetNotGone, tt.why)
				}
			} else if got.Outcome == etcdwrite.TargetNotGone || got.Outcome == etcdwrite.FixFailed || !strings.Contains(got.Detail, tt.why) {
				t.Errorf("outcome %s %q (error %v), want the fix made", got.Outcome, got.Detail, err)
			}
			gvr := vwcGVR
			if tt.kind == "ClusterRoleBinding" {
				gvr = crbGVR
			}
			after, gerr := dyn.Resource(gvr).Get(ctx, name, metav1.GetOptions{})
			changed := gerr != nil
			if !changed {
				unstructured.RemoveNestedField(after.Object, "metadata", "resourceVersion")
				unstructured.RemoveNestedField(before.Object, "metadata", "resourceVersion")
				changed = !reflect.DeepEqual(after.Object, before.Object)
			}
			if changed != tt.changed {
				t.Errorf("%s %s changed: %v (%v), want %v", tt.kind, name, changed, gerr, tt.changed)
			}
		})
	}
}

// TestPlanFixesDeletesADownAPIServiceOnlyByName: an APIService whose
// Service is down is never fixed, unless the operator names it
// (unstick --delete-unavailable-apiservice); a down webhook never is.
func TestPlanFixesDeletesADownAPIServiceOnlyByName(t *testing.T) {
	api := etcdscan.DanglingRef{Key: "/registry/apiregistration.k8s.io/apiservices/v1beta1.metrics.k8s.io", Kind: "APIService", Name: "v1beta1.metrics.k8s.io",
		Field: "spec.service", Target: "service monitoring/metrics-server", State: etcdscan.DanglingDown}
	hook := etcdscan.DanglingRef{Key: "/registry/validatingwebhookconfigurations/v", Kind: "ValidatingWebhookConfiguration", Name: "v",
		Field: "webhooks[a.example.com].clientConfig.service", Target: "service monitoring/metrics-server", State: etcdscan.DanglingDown, Entries: 1}
	for _, tt := range []struct {
		named []string
		want  int
	}{{nil, 0}, {[]string{"v1beta1.other.k8s.io"}, 0}, {[]string{"v1beta1.metrics.k8s.io", "v"}, 1}} {
		fixes, refused := PlanFixes([]etcdscan.DanglingRef{api, hook}, PlanOptions{DeleteDown: tt.named})
		if len(fixes) != tt.want || len(refused) != 0 || (tt.want == 1 && (!fixes[0].Delete || fixes[0].Kind != "APIService")) {
			t.Errorf("named %v: fixes %+v, refused %+v; want %d APIService deleted", tt.named, fixes, refused, tt.want)
		}
	}
}
