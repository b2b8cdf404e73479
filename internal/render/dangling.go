package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/regghost/regghost/pkg/dangling"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/plural"
	"github.com/regghost/regghost/pkg/table"
)

// Dangling writes the dangling references: one line each, then what
// breaks and the fix, wrapped.
func Dangling(out io.Writer, refs []etcdscan.DanglingRef) {
	if len(refs) == 0 {
		return
	}
	n := map[etcdscan.DanglingState]int{}
	for _, d := range refs {
		n[d.State]++
	}
	ghosts := ""
	if n[etcdscan.DanglingGhost] > 0 {
		ghosts = fmt.Sprintf(", %d into ghosts", n[etcdscan.DanglingGhost])
	}
	fmt.Fprintf(out, "\nDangling references: %d gone, %d down%s\n", n[etcdscan.DanglingGone], n[etcdscan.DanglingDown], ghosts)
	for _, d := range refs {
		who := d.Kind + " " + d.Name
		if d.Namespace != "" {
			who = d.Kind + " " + d.Namespace + "/" + d.Name
		}
		mark := ""
		if d.SingleWitness {
			mark = " *"
		}
		table.Wrapped(out, fmt.Sprintf("%s %s: %s -> %s is %s%s", strings.ToUpper(string(d.State)), table.Escape(who), table.Escape(d.Field), table.Escape(d.Target), d.State, mark))
		table.Wrapped(out, "  "+table.Escape(d.Consequence))
		table.Wrapped(out, "  fix: "+table.Escape(d.Fix))
		if len(d.ManagedBy) > 0 {
			table.Wrapped(out, "  managed by: "+table.Escape(strings.Join(d.ManagedBy, "; ")))
		}
	}
}

// DanglingByDesign writes the references kube-apiserver's own bootstrap
// policy holds by design (-o wide): one line each, not counted.
func DanglingByDesign(out io.Writer, refs []etcdscan.DanglingRef) {
	if len(refs) == 0 {
		return
	}
	fmt.Fprintf(out, "\nBy design, not counted: %s of kube-apiserver's own bootstrap policy to ServiceAccounts that exist only while the component using them runs\n", plural.Of(len(refs), "reference"))
	for _, d := range refs {
		table.Wrapped(out, fmt.Sprintf("BY DESIGN %s: %s -> %s", table.Escape(d.Kind+" "+nsName(d.Namespace, d.Name)), table.Escape(d.Field), table.Escape(d.Target)))
	}
}

// DanglingFixes says what a fix would do, and what it refuses.
func DanglingFixes(w io.Writer, fixes []dangling.Fix, refused []dangling.Refusal) {
	if len(fixes) > 0 {
		fmt.Fprintln(w, "\nFixes (through the API server, behind a verified backup):")
		for _, f := range fixes {
			what := "delete " + f.Kind + " " + nsName(f.Namespace, f.Name)
			if !f.Delete {
				what = "remove " + strings.Join(f.Remove, ", ") + " from " + f.Kind + " " + nsName(f.Namespace, f.Name)
			}
			table.Wrapped(w, "  "+table.Escape(what))
		}
	}
	for _, r := range refused {
		table.Wrapped(w, fmt.Sprintf("Refused: %s %s: %s; %s takes it", r.Ref.Kind, table.Escape(r.Ref.Name), table.Escape(r.Reason), r.WayOut))
	}
}

func nsName(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

// DanglingPlan is what dangling found and would fix, in every form -o can
// ask for; confirm is whether --confirm was given (with nothing to fix).
func DanglingPlan(refs []etcdscan.DanglingRef, fixes []dangling.Fix, refused []dangling.Refusal, confirm bool) Output {
	return Output{Doc: map[string]any{"dryRun": !confirm, "references": NonNil(refs), "fixes": NonNil(fixes), "refused": NonNil(refused), "results": []any{}},
		Human: func(w io.Writer, _, _ bool) error {
			WriteDanglingPlan(w, refs, fixes, refused)
			if len(refs) == 0 {
				fmt.Fprintln(w, "No dangling reference.")
			} else if !confirm && len(fixes) > 0 {
				fmt.Fprintln(w, "\nDry run: nothing was changed. Re-run with --confirm to make the fixes above.")
			}
			return nil
		}}
}

// WriteDanglingPlan writes the references and what fixing them does (the
// plan shown with the question).
func WriteDanglingPlan(w io.Writer, refs []etcdscan.DanglingRef, fixes []dangling.Fix, refused []dangling.Refusal) {
	Dangling(w, refs)
	DanglingFixes(w, fixes, refused)
}

// DanglingResult is what dangling fixed; its rows are the keys with their
// outcome.
func DanglingResult(refs []etcdscan.DanglingRef, fixes []dangling.Fix, refused []dangling.Refusal, res *dangling.Result) Output {
	return Output{Doc: map[string]any{"dryRun": false, "references": refs, "fixes": fixes, "refused": NonNil(refused), "results": res.Results, "backup": res.Backup},
		Rows: ResultRows(res.Results), Human: func(w io.Writer, _, _ bool) error {
			fmt.Fprintln(w)
			table.Wrapped(w, "Backup "+res.Backup+" (verified)")
			fmt.Fprintln(w)
			Results(w, res.Results)
			fmt.Fprintf(w, "Undo:  regghost restore %s --confirm\n", res.Dir)
			return nil
		}}
}
