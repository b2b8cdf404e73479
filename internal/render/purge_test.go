package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/impact"
	"github.com/regghost/regghost/pkg/repair"
	"github.com/regghost/regghost/pkg/table"
)

// refusedPlan is a purge plan whose claim's volume would be destroyed, and
// whose other keys rest on one witness.
func refusedPlan() *repair.Plan {
	claim := "/registry/persistentvolumeclaims/vault/data"
	long := "unsealer-configuration-generated-by-the-operator-for-the-primary-cluster-in-region-europe-west"
	plan := &repair.Plan{Scope: "namespace vault", Prefix: "/registry/", Revision: 91, Targets: []etcdscan.Finding{
		{Key: claim, Namespace: "vault", Name: "data", Kind: "PersistentVolumeClaim", Classes: []etcdscan.Class{etcdscan.ClassOrphanedNamespace},
			Reasons: []string{"namespace vault does not exist (no /registry/namespaces/vault key)"}, Ghost: true, ModRevision: 88},
		{Key: "/registry/configmaps/vault/" + long, Namespace: "vault", Name: long, Kind: "ConfigMap", Classes: []etcdscan.Class{etcdscan.ClassOrphanedNamespace},
			Reasons: []string{"namespace vault does not exist (no /registry/namespaces/vault key)"}, Ghost: true, SingleWitness: true, ModRevision: 74},
	}}
	plan.SetImpact(&impact.Report{Effects: map[string][]impact.Effect{claim: {
		{Kind: impact.FinalizersSkipped, Summary: "finalizers [kubernetes.io/pvc-protection] never run: the cleanup they guard is skipped (a restore brings them back)"},
		{Kind: impact.StorageDestroyed, Irreversible: true, WayOut: impact.RetainVolumesFlag,
			Summary: "the PersistentVolume controller releases PV pvc-8730bc07-1390-4a1e-9e63-c8346b2f7c94 (reclaim policy Delete) and deletes its storage (/tmp/hostpath_pv/20edbd75-3816-4b92-ba9b-f7bc390900e9)"},
	}}}, impact.Options{})
	return plan
}

// TestPlanFitsNarrowTerminals: the dry run of a refused purge fits 120
// columns and terminals down to 80; the irreversible effect is said whole in
// the refusal; the summary says nothing would be deleted, and why, one line
// each; -o wide prints IMPACT whole.
func TestPlanFitsNarrowTerminals(t *testing.T) {
	plan := refusedPlan()
	irreversible := plan.Effects("/registry/persistentvolumeclaims/vault/data")[1].Summary
	for _, width := range []int{table.MaxWidth, 100, 80} {
		var b bytes.Buffer
		if err := WritePurgePlan(&table.Layout{Writer: &b, Width: width}, plan, true); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		for _, line := range strings.Split(out, "\n") {
			if n := table.TextWidth(line); n > width {
				t.Errorf("width %d: line of %d columns: %q", width, n, line)
			}
		}
		if !strings.Contains(strings.Join(strings.Fields(out), " "), irreversible) {
			t.Errorf("width %d: the irreversible effect is not said whole:\n%s", width, out)
		}
		if width == table.MaxWidth {
			for _, want := range []string{
				"\nRefused as it stands: a purge is refused whole, so --confirm would delete none of these 2 keys (etcd revision 91):\n",
				"\n  1 key needs --accept-single-witness, or an API server to confirm it: its ghost verdict rests on one witness only\n",
				"\n  1 key needs --retain-volumes: deleting it sets off what a restore cannot undo (storage-destroyed)\n",
				"\nGiven what each line needs, the 2 keys in namespace vault would be deleted. Nothing was changed.\n",
				"IRREVERSIBLE: the Persist", "…",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("the plan lacks %q:\n%s", want, out)
				}
			}
			if strings.Contains(out, "Dry run: 2 keys") {
				t.Errorf("a refused plan says its keys would be deleted:\n%s", out)
			}
		}
	}
	var b bytes.Buffer
	if err := WritePurgePlan(&table.Layout{Writer: &b, Width: table.MaxWidth, Full: true}, plan, true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "IRREVERSIBLE: "+irreversible+"; finalizers [kubernetes.io/pvc-protection] never run") {
		t.Errorf("-o wide does not print IMPACT whole, the irreversible effect first:\n%s", b.String())
	}
}
