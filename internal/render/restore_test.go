package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/flagnames"
)

// TestRestorePlanRefusedLine: the closing line of a restore's plan points
// at --into-recreated only for the keys that flag writes (a namespace or
// CRD created again, or gone); a key refused for what its bytes need (a
// version its CRD no longer lists, the Service an APIService calls) is
// sent to its own reason; either way the plan fails the command.
func TestRestorePlanRefusedLine(t *testing.T) {
	recreated := etcdwrite.Result{Key: "/registry/pods/ns1/p", Outcome: etcdwrite.Refused,
		Detail: "namespace ns1 was created again since the purge: written back, the key would join a namespace of that name it never belonged to; " + flagnames.IntoRecreated + " writes it there anyway"}
	version := etcdwrite.Result{Key: "/registry/example.com/gadgets/ns1/g1", Outcome: etcdwrite.Refused,
		Detail: "stored at example.com/v1beta1, which CustomResourceDefinition gadgets.example.com no longer lists in spec.versions (it lists v1)"}
	restore := etcdwrite.Result{Key: "/registry/example.com/gadgets/ns1/g2", Outcome: etcdwrite.WouldRestore}
	tests := []struct {
		name      string
		plan      []etcdwrite.Result
		want, not []string
	}{
		{name: "namespace created again: the flag", plan: []etcdwrite.Result{recreated, restore},
			want: []string{"Refused 1 key: the namespace or CustomResourceDefinition each rests on was created again", flagnames.IntoRecreated + " writes it into one that exists"}},
		{name: "a version no longer listed: its reason, no flag", plan: []etcdwrite.Result{version, restore},
			want: []string{"Refused 1 key: written back, it would break what another command proved gone (each reason above, with what to do first); it stays in the backup."},
			not:  []string{flagnames.IntoRecreated + " writes"}},
		{name: "both", plan: []etcdwrite.Result{recreated, version, restore},
			want: []string{"Refused 2 keys (each reason above); they stay in the backup.", flagnames.IntoRecreated + " writes the 1 whose namespace or CustomResourceDefinition was created again", "the other 1 need what their reason names first"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := RestorePlan("/backups/b", len(tt.plan), tt.plan, true, false).Human(&b, false, false); err != nil {
				t.Fatal(err)
			}
			out := strings.Join(strings.Fields(b.String()), " ")
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("plan lacks %q:\n%s", w, b.String())
				}
			}
			for _, w := range tt.not {
				if strings.Contains(out, w) {
					t.Errorf("plan has %q:\n%s", w, b.String())
				}
			}
			if ConflictError(tt.plan) == nil {
				t.Error("a plan with a refused key does not fail the command")
			}
		})
	}
}
