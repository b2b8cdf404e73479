package impact

import (
	"context"
	"slices"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/etcdscan"
)

// TestServiceCallersFail: deleting a Service that a live webhook with
// failurePolicy Fail (or left to its default) or an APIService calls is
// refused until accepted; one only an Ignore webhook calls, or nobody, is
// not; a caller that cannot be read makes it unknown.
func TestServiceCallersFail(t *testing.T) {
	ctx := context.Background()
	svc := func(name string) string {
		return etcdtest.Encode(t, &corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}, ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("u-" + name)}})
	}
	hook := func(name, service string, policy *admissionregistrationv1.FailurePolicyType) string {
		return etcdtest.Encode(t, &admissionregistrationv1.ValidatingWebhookConfiguration{TypeMeta: metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"},
			ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("u-" + name)},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: name + ".example.com", FailurePolicy: policy,
				ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "ns", Name: service}}}}})
	}
	ignore, fail := admissionregistrationv1.Ignore, admissionregistrationv1.Fail
	tests := []struct {
		name string
		keys map[string]string
		want []Kind
	}{
		{"a Fail webhook", map[string]string{"validatingwebhookconfigurations/guard": hook("guard", "hook", &fail)}, []Kind{CallersFail}},
		{"a webhook left to the default", map[string]string{"validatingwebhookconfigurations/guard": hook("guard", "hook", nil)}, []Kind{CallersFail}},
		{"an Ignore webhook", map[string]string{"validatingwebhookconfigurations/guard": hook("guard", "hook", &ignore)}, nil},
		{"a webhook of another Service", map[string]string{"validatingwebhookconfigurations/guard": hook("guard", "other", &fail)}, nil},
		{"an APIService", map[string]string{"apiregistration.k8s.io/apiservices/v1.metrics.example.com": `{"apiVersion":"apiregistration.k8s.io/v1","kind":"APIService","metadata":{"name":"v1.metrics.example.com","uid":"u-a"},"spec":{"group":"metrics.example.com","version":"v1","service":{"namespace":"ns","name":"hook"}}}`}, []Kind{CallersFail}},
		{"a caller nobody can read", map[string]string{"mutatingwebhookconfigurations/broken": "k8s:enc:kms:v2:key:\x01"}, []Kind{Unknown}},
		{"a caller purged with it", map[string]string{"validatingwebhookconfigurations/doomed": hook("doomed", "hook", &fail)}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cli, _ := etcdtest.Start(t)
			etcdtest.Put(t, cli, "/registry/services/specs/ns/hook", svc("hook"))
			for k, v := range tt.keys {
				etcdtest.Put(t, cli, "/registry/"+k, v)
			}
			store, err := etcdscan.NewEtcdStore(ctx, cli, 100)
			if err != nil {
				t.Fatal(err)
			}
			targets := []etcdscan.Finding{{Key: "/registry/services/specs/ns/hook", Namespace: "ns", Name: "hook"}}
			if _, ok := tt.keys["validatingwebhookconfigurations/doomed"]; ok {
				targets = append(targets, etcdscan.Finding{Key: "/registry/validatingwebhookconfigurations/doomed", Name: "doomed"})
			}
			rep, err := Analyze(ctx, store, "/registry/", targets, Readers{})
			if err != nil {
				t.Fatal(err)
			}
			var got []Kind
			for _, e := range rep.Effects["/registry/services/specs/ns/hook"] {
				got = append(got, e.Kind)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("effects %v, want %v", got, tt.want)
			}
		})
	}
}
