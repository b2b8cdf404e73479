package render

import (
	"bytes"
	"testing"
	"time"

	"github.com/regghost/regghost/pkg/etcdscan"
)

// TestReportJSONStreamedAsPrinted: -o json written one finding at a time is
// byte for byte what the JSON printer writes from the whole document.
func TestReportJSONStreamedAsPrinted(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	finding := func(key string) etcdscan.Finding {
		return etcdscan.Finding{Key: key, Resource: "pods", Namespace: "kb-system", Name: "p<1>&\"x\"\n",
			Classes: []etcdscan.Class{etcdscan.ClassOrphanedNamespace}, Reasons: []string{"namespace kb-system does not exist"},
			Ghost: true, Evidence: []etcdscan.Evidence{{Class: etcdscan.ClassOrphanedNamespace, Witness: etcdscan.WitnessEtcd, Asked: "key", Answer: etcdscan.Confirms, Said: "gone"}},
			Absent: []string{"/registry/namespaces/kb-system"}, CreateRevision: 3, ModRevision: 4, Created: &created}
	}
	tests := []struct {
		name string
		rep  *etcdscan.Report
	}{
		{"no findings", &etcdscan.Report{Revision: 9, Prefix: "/registry/", Summary: map[etcdscan.Class]int{}}},
		{"one finding", &etcdscan.Report{Revision: 9, Prefix: "/registry/", Findings: []etcdscan.Finding{finding("/registry/pods/kb-system/p1")}}},
		{"several, with everything after them", &etcdscan.Report{Revision: 9, Prefix: "/registry/", Encrypted: map[string]int{"findings": 1},
			Checks:      []etcdscan.Check{{Name: "findings\": null", Done: true}},
			Findings:    []etcdscan.Finding{finding("/registry/pods/kb-system/p1"), finding("/registry/pods/kb-system/p2")},
			Summary:     map[etcdscan.Class]int{etcdscan.ClassOrphanedNamespace: 2},
			Dangling:    []etcdscan.DanglingRef{{Key: "/registry/apiregistration.k8s.io/apiservices/v1.x", Kind: "APIService", State: etcdscan.DanglingGone}},
			Terminating: []etcdscan.TerminatingNamespace{{Name: "leaving", Since: time.Minute}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPrintFlags(true, "table", "wide")
			p.output = "json"
			o := Report(tt.rep, time.Now)
			var streamed, printed bytes.Buffer
			if err := p.Print(&streamed, o); err != nil {
				t.Fatal(err)
			}
			o.JSON = nil
			if err := p.Print(&printed, o); err != nil {
				t.Fatal(err)
			}
			if streamed.String() != printed.String() {
				t.Errorf("streamed:\n%s\nprinted:\n%s", streamed.String(), printed.String())
			}
		})
	}
}
