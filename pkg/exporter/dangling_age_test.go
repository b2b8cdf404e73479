package exporter

import (
	"strings"
	"testing"
	"time"

	"github.com/regghost/regghost/pkg/etcdscan"
)

// TestDanglingAge: a reference is dated from its APIService's Available
// condition when it has one, else from the first cycle that saw it; one
// that goes away is forgotten and dated afresh when it comes back. The
// age is exported as of the last good scan, the oldest of each series.
func TestDanglingAge(t *testing.T) {
	unavailable := time.Unix(500, 0)
	api := func() etcdscan.DanglingRef {
		return etcdscan.DanglingRef{Key: "/registry/apiregistration.k8s.io/apiservices/v1.x", Kind: "APIService", Field: "spec.service",
			Target: "service kb-system/api", TargetNamespace: "kb-system", State: etcdscan.DanglingGone, Since: &unavailable}
	}
	hook := func() etcdscan.DanglingRef {
		return etcdscan.DanglingRef{Key: "/registry/admissionregistration.k8s.io/validatingwebhookconfigurations/v", Kind: "ValidatingWebhookConfiguration",
			Field: "webhooks[v.x].clientConfig.service", Target: "service kb-system/hook", TargetNamespace: "kb-system", State: etcdscan.DanglingGone}
	}
	c := NewCollector(nil)
	var clock danglingClock
	steps := []struct {
		name string
		at   int64
		refs []etcdscan.DanglingRef
		want string
	}{
		{"first sight", 1000, []etcdscan.DanglingRef{api(), hook()}, `
regghost_dangling_reference_age_seconds{kind="APIService",state="gone",target_namespace="kb-system"} 500
regghost_dangling_reference_age_seconds{kind="ValidatingWebhookConfiguration",state="gone",target_namespace="kb-system"} 0
`},
		{"a cycle later", 1600, []etcdscan.DanglingRef{api(), hook()}, `
regghost_dangling_reference_age_seconds{kind="APIService",state="gone",target_namespace="kb-system"} 1100
regghost_dangling_reference_age_seconds{kind="ValidatingWebhookConfiguration",state="gone",target_namespace="kb-system"} 600
`},
		{"the webhook fixed", 2200, []etcdscan.DanglingRef{api()}, `
regghost_dangling_reference_age_seconds{kind="APIService",state="gone",target_namespace="kb-system"} 1700
`},
		{"the webhook dangles again", 2800, []etcdscan.DanglingRef{api(), hook()}, `
regghost_dangling_reference_age_seconds{kind="APIService",state="gone",target_namespace="kb-system"} 2300
regghost_dangling_reference_age_seconds{kind="ValidatingWebhookConfiguration",state="gone",target_namespace="kb-system"} 0
`},
	}
	for _, s := range steps {
		at := time.Unix(s.at, 0)
		rep := &etcdscan.Report{Dangling: s.refs}
		clock.date(rep.Dangling, at)
		c.Succeeded(mustSummarize(t, rep), time.Second, Cost{}, at)
		if got := samples(t, c, "regghost_dangling_reference_age_seconds"); got != strings.TrimSpace(s.want) {
			t.Errorf("%s:\n got:\n%s\nwant:\n%s", s.name, got, strings.TrimSpace(s.want))
		}
	}
}
