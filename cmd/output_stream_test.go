package cmd

import (
	"bytes"
	"fmt"
	"strings"
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
			p := newPrintFlags(true, "table", "wide")
			p.output = "json"
			o := reportOutput(tt.rep)
			var streamed, printed bytes.Buffer
			if err := p.print(&streamed, o); err != nil {
				t.Fatal(err)
			}
			o.json = nil
			if err := p.print(&printed, o); err != nil {
				t.Fatal(err)
			}
			if streamed.String() != printed.String() {
				t.Errorf("streamed:\n%s\nprinted:\n%s", streamed.String(), printed.String())
			}
		})
	}
}

// TestTableChunksLayOutAsOne: a table rendered a chunk of rows at a time is
// the table rendered whole, cut cells, wide characters and comments included.
func TestTableChunksLayOutAsOne(t *testing.T) {
	render := func(chunk int, full bool, width int) string {
		old := tableChunk
		tableChunk = chunk
		defer func() { tableChunk = old }()
		var b bytes.Buffer
		tb := newTable(&laidOut{Writer: &b, width: width, full: full}, "NAMESPACE", "KIND", "NAME", "REASON")
		for i := 0; i < 1300; i++ {
			if i%97 == 0 {
				tb.comment(fmt.Sprintf("group %d: a reason long enough to wrap over the width of the table, said once above its rows", i))
			}
			name := strings.Repeat("n", i%53) + fmt.Sprint(i)
			if i%7 == 0 {
				name = "名前" + name
			}
			_ = tb.Append([]string{fmt.Sprintf("ns-%d", i%13), "Pod", name, strings.Repeat("why ", i%31)})
		}
		tb.comment("trailing comment")
		if err := tb.Render(); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	tests := []struct {
		name  string
		full  bool
		width int
	}{
		{"cut to 80 columns", false, 80},
		{"cut to 120 columns", false, 120},
		{"wide, cells whole", true, 120},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			whole, chunked := render(1<<30, tt.full, tt.width), render(100, tt.full, tt.width)
			if whole != chunked {
				t.Errorf("chunked table differs from the whole one:\n%s", firstDiff(whole, chunked))
			}
		})
	}
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) && i < len(bl); i++ {
		if al[i] != bl[i] {
			return fmt.Sprintf("line %d:\nwhole:   %q\nchunked: %q", i+1, al[i], bl[i])
		}
	}
	return fmt.Sprintf("%d lines whole, %d chunked", len(al), len(bl))
}
