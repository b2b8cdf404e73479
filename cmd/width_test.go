package cmd

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/impact"
	"github.com/regghost/regghost/pkg/repair"
)

// TestCut: a cut keeps to its width in columns, never splits a rune, and
// is marked with ….
func TestCut(t *testing.T) {
	for _, s := range []string{
		"/registry/configmaps/kb-system/settings-for-the-primary-cluster",
		"名前空間の設定マップ名前空間の設定マップ名前空間の設定マップ",
		`evil\u001b]0;pwned\u0007\u001b[2J\u009b31m\u000dname`,
		"ünïcödé-ünïcödé-ünïcödé-ünïcödé-ünïcödé-ünïcödé",
	} {
		for w := 1; w <= textWidth(s)+1; w++ {
			for name, cut := range map[string]func(string, int) string{"cutEnd": cutEnd, "cutMiddle": cutMiddle} {
				got := cut(s, w)
				if textWidth(got) > w || !utf8.ValidString(got) {
					t.Errorf("%s(%q, %d) = %q: %d columns", name, s, w, got, textWidth(got))
				}
				if w >= textWidth(s) && got != s {
					t.Errorf("%s(%q, %d) = %q, want it whole", name, s, w, got)
				}
				if w < textWidth(s) && !strings.Contains(got, ellipsis) {
					t.Errorf("%s(%q, %d) = %q: the cut is not marked", name, s, w, got)
				}
			}
		}
	}
	if got := cutMiddle("/registry/persistentvolumes/pvc-8730bc07-1390-4a1e-9e63-c8346b2f7c94", 40); got != "/registry/persisten…1e-9e63-c8346b2f7c94" {
		t.Errorf("cutMiddle keeps %q", got)
	}
	if textWidth("名前") != 4 || textWidth("é") != 1 || textWidth("e\u0301") != 1 {
		t.Error("textWidth does not count terminal columns")
	}
}

// TestWrap: lines fit, break at spaces, and lose nothing but blanks.
func TestWrap(t *testing.T) {
	text := "the PersistentVolume controller releases PV pvc-8730bc07-1390-4a1e-9e63-c8346b2f7c94 (reclaim policy Delete) and deletes its storage (/tmp/hostpath_pv/20edbd75-3816-4b92-ba9b-f7bc390900e9)"
	for _, w := range []int{20, 40, 80, 118} {
		lines := wrapLines(text, w-10, w)
		for i, l := range lines {
			limit := w
			if i == 0 {
				limit = w - 10
			}
			if textWidth(l) > limit {
				t.Errorf("width %d: line %q is %d columns", w, l, textWidth(l))
			}
		}
		if strings.Join(lines, " ") != text && w > 60 {
			t.Errorf("width %d: wrapped text differs:\n%s", w, strings.Join(lines, "\n"))
		}
	}
}

// TestFitColumns: the prose column is cut first; the others only when it
// is down to a few words.
func TestFitColumns(t *testing.T) {
	got := fitColumns([]int{40, 10, 200}, []int{3, 7, 6}, []int{2}, 120, false)
	if got[0] != 40 || got[1] != 10 || got[2] != 120-40-10-4 {
		t.Errorf("widths %v", got)
	}
	got = fitColumns([]int{110, 10, 200}, []int{3, 7, 6}, []int{2}, 120, false)
	if got[2] != proseMin || got[0]+got[1]+got[2]+4 > 120 {
		t.Errorf("widths %v", got)
	}
	got = fitColumns([]int{110, 10, 200}, []int{3, 7, 6}, []int{2}, 120, true)
	if got[0] != got[2] || got[0]+got[1]+got[2]+4 > 120 {
		t.Errorf("balanced widths %v", got)
	}
}

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
	for _, width := range []int{tableWidth, 100, 80} {
		var b bytes.Buffer
		if err := printPlan(&laidOut{Writer: &b, width: width}, plan, true); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		for _, line := range strings.Split(out, "\n") {
			if n := textWidth(line); n > width {
				t.Errorf("width %d: line of %d columns: %q", width, n, line)
			}
		}
		if !strings.Contains(strings.Join(strings.Fields(out), " "), irreversible) {
			t.Errorf("width %d: the irreversible effect is not said whole:\n%s", width, out)
		}
		if width == tableWidth {
			for _, want := range []string{
				"\nRefused as it stands: a purge is refused whole, so --confirm would delete none of these 2 keys (etcd revision 91):\n",
				"\n  1 key needs --accept-single-witness, or an API server to confirm it: its ghost verdict rests on one witness only\n",
				"\n  1 key needs --retain-volumes: deleting it sets off what a restore cannot undo (storage-destroyed)\n",
				"\nGiven what each line needs, the 2 keys in namespace vault would be deleted. Nothing was changed.\n",
				"IRREVERSIBLE: the Persist", ellipsis,
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
	if err := printPlan(&laidOut{Writer: &b, width: tableWidth, full: true}, plan, true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "IRREVERSIBLE: "+irreversible+"; finalizers [kubernetes.io/pvc-protection] never run") {
		t.Errorf("-o wide does not print IMPACT whole, the irreversible effect first:\n%s", b.String())
	}
}

// TestResultsKeepOrder: the outcome table keeps its rows in order (a
// volume's Retain right before its claim's delete), and each detail it
// cuts is written whole below it.
func TestResultsKeepOrder(t *testing.T) {
	pv, claim := "/registry/persistentvolumes/pvc-8730bc07-1390-4a1e-9e63-c8346b2f7c94", "/registry/persistentvolumeclaims/kb-system/data"
	detail := "reclaim policy Delete -> Retain through the API server (resourceVersion 86 -> 95); the original is in the backup"
	var b bytes.Buffer
	printResults(&laidOut{Writer: &b, width: tableWidth}, []etcdwrite.Result{
		{Key: pv, Outcome: etcdwrite.Retained, Detail: detail},
		{Key: claim, Outcome: etcdwrite.Deleted},
	})
	lines := strings.Split(b.String(), "\n")
	if !strings.HasPrefix(lines[1], pv+"  retained") || !strings.HasPrefix(lines[2], claim+" ") {
		t.Errorf("rows out of order:\n%s", b.String())
	}
	if !strings.Contains(b.String(), "\nretained "+pv+":\n  "+detail+"\n") {
		t.Errorf("the cut detail is not written whole:\n%s", b.String())
	}
	for _, l := range lines {
		if textWidth(l) > tableWidth {
			t.Errorf("line of %d columns: %q", textWidth(l), l)
		}
	}
}

// TestCommands: a command that does not fit is broken before its options
// with backslashes; one with a single flag, or that cannot fit, is written
// whole.
func TestCommands(t *testing.T) {
	var b bytes.Buffer
	printCommand(&laidOut{Writer: &b, width: 80}, "  ", "etcdutl snapshot restore /var/lib/regghost/backups/x/snapshot.db --data-dir /var/lib/etcd-restored --bump-revision 1000000000 --mark-compacted")
	want := "  etcdutl snapshot restore /var/lib/regghost/backups/x/snapshot.db \\\n" +
		"      --data-dir /var/lib/etcd-restored --bump-revision 1000000000 \\\n" +
		"      --mark-compacted\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	for _, l := range strings.Split(b.String(), "\n") {
		if textWidth(l) > 80 {
			t.Errorf("line of %d columns: %q", textWidth(l), l)
		}
	}
	b.Reset()
	lone := "regghost snapshot restore /var/lib/regghost/backups/20261203T143626Z-namespace-kb-system/snapshot.jsonl --confirm"
	printCommand(&laidOut{Writer: &b, width: 80}, "  ", lone)
	if b.String() != "  "+lone+"\n" {
		t.Errorf("a command with one flag is broken: %q", b.String())
	}
	b.Reset()
	long := "regghost snapshot restore /" + strings.Repeat("x", 100) + "/snapshot.jsonl --confirm"
	printCommand(&laidOut{Writer: &b, width: 80}, "  ", long)
	if b.String() != "  "+long+"\n" {
		t.Errorf("a command longer than the screen is not written whole: %q", b.String())
	}
}

// TestTermWidth: output that is not a terminal is laid out for 120 columns.
func TestTermWidth(t *testing.T) {
	if w := termWidth(&bytes.Buffer{}); w != tableWidth {
		t.Errorf("termWidth of a buffer = %d", w)
	}
	if w, full := layoutOf(&safeWriter{w: &bytes.Buffer{}}); w != tableWidth || full {
		t.Errorf("layoutOf(safeWriter) = %d, %v", w, full)
	}
}
