package repair

import (
	"errors"
	"strings"
	"testing"

	"github.com/regghost/regghost/pkg/etcdscan"
)

func report() *etcdscan.Report {
	f := func(key, ns string, ghost bool, rev int64, classes ...etcdscan.Class) etcdscan.Finding {
		return etcdscan.Finding{Key: key, Namespace: ns, Ghost: ghost, ModRevision: rev, Classes: classes, Reasons: make([]string, len(classes))}
	}
	return &etcdscan.Report{Prefix: "/registry/", Revision: 100, Findings: []etcdscan.Finding{
		f("/registry/pods/ns1/a", "ns1", true, 10, etcdscan.ClassOrphanedNamespace),
		f("/registry/pods/ns1/b", "ns1", true, 11, etcdscan.ClassOrphanedNamespace),
		f("/registry/pods/ns10/c", "ns10", true, 12, etcdscan.ClassOrphanedNamespace),
		f("/registry/pods/ns1/stuck", "ns1", false, 13, etcdscan.ClassStuckTerminating),
		f("/registry/pods/ns1/disputed", "ns1", false, 14, etcdscan.ClassDisputed),
	}}
}

func TestNewPlan(t *testing.T) {
	tests := []struct {
		name    string
		sel     Selector
		want    []string
		skipped int
		refused bool
		says    string
	}{
		{name: "no scope", sel: Selector{}, refused: true},
		{name: "namespace takes only its ghosts, not ns10", sel: Selector{Namespace: "ns1"}, want: []string{"/registry/pods/ns1/a", "/registry/pods/ns1/b"}},
		{name: "force-class admits the suspect", sel: Selector{Namespace: "ns1", ForceClasses: []etcdscan.Class{etcdscan.ClassStuckTerminating}},
			want: []string{"/registry/pods/ns1/a", "/registry/pods/ns1/b", "/registry/pods/ns1/stuck"}},
		{name: "force-class of a ghost class", sel: Selector{Namespace: "ns1", ForceClasses: []etcdscan.Class{etcdscan.ClassUndecodable}}, refused: true},
		{name: "exact key", sel: Selector{Keys: []string{"/registry/pods/ns1/b", "/registry/pods/ns1/b"}}, want: []string{"/registry/pods/ns1/b"}},
		{name: "key that is not a finding", sel: Selector{Keys: []string{"/registry/pods/ns1/live"}}, refused: true},
		{name: "prefix as key", sel: Selector{Keys: []string{"/registry/pods/"}}, refused: true},
		{name: "suspect key", sel: Selector{Keys: []string{"/registry/pods/ns1/stuck"}}, refused: true, says: "`regghost unstick namespace ns1` ends that through the API server"},
		{name: "disputed key", sel: Selector{Keys: []string{"/registry/pods/ns1/disputed"}}, refused: true},
		{name: "force-class disputed", sel: Selector{Namespace: "ns1", ForceClasses: []etcdscan.Class{etcdscan.ClassDisputed}}, refused: true},
		{name: "key outside the namespace", sel: Selector{Namespace: "ns1", Keys: []string{"/registry/pods/ns10/c"}}, refused: true},
		{name: "reviewed plan pins revisions", sel: Selector{Namespace: "ns1", Reviewed: &etcdscan.Report{Prefix: "/registry/", Findings: []etcdscan.Finding{
			{Key: "/registry/pods/ns1/a", Namespace: "ns1", Ghost: true, ModRevision: 10},
			{Key: "/registry/pods/ns1/b", Namespace: "ns1", Ghost: true, ModRevision: 9},
			{Key: "/registry/pods/ns1/recreated", Namespace: "ns1", Ghost: true, ModRevision: 5},
			{Key: "/registry/pods/ns10/c", Namespace: "ns10", Ghost: true, ModRevision: 12},
		}}}, want: []string{"/registry/pods/ns1/a"}, skipped: 2},
		{name: "reviewed plan of another prefix", sel: Selector{Namespace: "ns1", Reviewed: &etcdscan.Report{Prefix: "/other/"}}, refused: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewPlan(report(), tt.sel)
			if tt.refused {
				if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tt.says) {
					t.Fatalf("err = %v, want a refusal saying %q", err, tt.says)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range p.Targets {
				got = append(got, f.Key)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("targets %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("targets %v, want %v", got, tt.want)
				}
			}
			if len(p.Skipped) != tt.skipped {
				t.Errorf("skipped %v, want %d", p.Skipped, tt.skipped)
			}
		})
	}
}

// TestSingleWitnessBlocks: a plan holding a single-witness ghost is refused
// unless the selector accepts single-witness verdicts.
func TestSingleWitnessBlocks(t *testing.T) {
	rep := report()
	rep.Findings[0].SingleWitness = true
	for _, accept := range []bool{false, true} {
		plan, err := NewPlan(rep, Selector{Namespace: "ns1", AcceptSingleWitness: accept})
		if err != nil {
			t.Fatal(err)
		}
		err = plan.Refusal()
		if accept != (err == nil) {
			t.Errorf("accept %v: refusal %v", accept, err)
		}
		if err != nil && (!errors.Is(err, ErrRefused) || len(plan.Blockers()) != 1 || plan.Blockers()[0].Keys[0] != "/registry/pods/ns1/a") {
			t.Errorf("blockers %+v: %v", plan.Blockers(), err)
		}
	}
}
