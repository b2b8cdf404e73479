package render

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/flagnames"
	"github.com/regghost/regghost/pkg/impact"
	"github.com/regghost/regghost/pkg/plural"
	"github.com/regghost/regghost/pkg/repair"
	"github.com/regghost/regghost/pkg/snapshot"
	"github.com/regghost/regghost/pkg/table"
)

// PurgePlan is a purge plan (a dry run) in every form -o can ask for;
// its rows are the keys that would be deleted.
func PurgePlan(plan *repair.Plan, dryRun bool) Output {
	return Output{Doc: map[string]any{"dryRun": dryRun, "scope": plan.Scope, "revision": plan.Revision,
		"targets": NonNil(plan.Targets), "skipped": NonNil(plan.Skipped), "blockers": NonNil(plan.Blockers()),
		"impact": plan.Impact}, Rows: RowsOf(plan.Targets, func(f *etcdscan.Finding) string { return f.Key }),
		Human: func(w io.Writer, _, _ bool) error { return WritePurgePlan(w, plan, dryRun) }}
}

// WritePurgePlan writes what a purge would delete: the grouped table (IMPACT cut
// to fit, whole in -o wide), what would be refused with the way out of
// each, as wrapped paragraphs, and for a dry run a summary that counts what
// would be deleted and what would be refused, one line each.
func WritePurgePlan(out io.Writer, plan *repair.Plan, dryRun bool) error {
	writeUnstickFirst(out, plan.Targets)
	if len(plan.Targets) > 0 {
		// IMPACT and a long NAME share what the screen leaves them.
		t := groupedTable(out, plan.Targets, []string{"NAMESPACE", "KIND", "NAME", "CLASS", "REV", "IMPACT"}, false, func(f *etcdscan.Finding) []string {
			return []string{table.OrDash(f.Namespace), kindOf(f), f.Name, markedClass(f), fmt.Sprint(f.ModRevision), impactCell(plan, f.Key)}
		})
		t.Balanced = true
		_ = t.Render()
		single := 0
		for _, f := range plan.Targets {
			if f.SingleWitness {
				single++
			}
		}
		if single > 0 {
			table.Wrapped(out, fmt.Sprintf("* %s on a single witness (the API server could not confirm %s)", plural.Verb(single, "ghost", "rests", "rest"), plural.Them(single)))
		}
	}
	if len(plan.Skipped) > 0 {
		fmt.Fprintln(out)
		Results(out, plan.Skipped)
	}
	blockers := plan.Blockers()
	for _, b := range blockers {
		writeBlocker(out, plan, b)
	}
	switch {
	case len(plan.Targets) == 0:
		fmt.Fprintf(out, "No ghost to purge in %s at etcd revision %d; nothing was changed.\n", plan.Scope, plan.Revision)
	case len(blockers) > 0:
		writeRefusedSummary(out, plan, blockers)
	case dryRun:
		fmt.Fprintln(out)
		table.Wrapped(out, fmt.Sprintf("Dry run: %s in %s would be deleted (etcd revision %d). Nothing was changed.", keys(len(plan.Targets)), plan.Scope, plan.Revision))
		fmt.Fprintf(out, "Re-run with --confirm to snapshot, back up and delete %s.\n", plural.Them(len(plan.Targets)))
	}
	return nil
}

// impactCell is the IMPACT cell of a key: its effects, those a confirmed
// purge refuses first, then those let go ahead, then the reversible ones,
// so that what matters most survives a cut.
func impactCell(plan *repair.Plan, key string) string {
	effects := plan.Effects(key)
	var refused map[string][]impact.Effect
	if plan.Impact != nil {
		refused = plan.Impact.Refused(plan.ImpactOptions)
	}
	rank := func(e impact.Effect) int {
		switch {
		case !e.Irreversible:
			return 2
		case slices.ContainsFunc(refused[key], func(r impact.Effect) bool { return r.Kind == e.Kind && r.Summary == e.Summary }):
			return 0
		}
		return 1
	}
	ordered := slices.Clone(effects)
	slices.SortStableFunc(ordered, func(a, b impact.Effect) int { return rank(a) - rank(b) })
	return impact.Short(ordered, plan.ImpactOptions)
}

// writeBlocker writes one reason a confirmed purge would be refused, as
// paragraphs: the reason, the keys (each with the irreversible effects it
// sets off, when there are several), the way out.
func writeBlocker(out io.Writer, plan *repair.Plan, b repair.Blocker) {
	fmt.Fprintln(out)
	table.Para(out, "Would be refused: ", "  ", b.Reason+".")
	effects := plan.BlockerEffects(b)
	if len(b.Keys) > 1 && len(effects) > 0 {
		fmt.Fprintln(out, "  Keys:")
		for _, k := range b.Keys {
			text := k
			var says []string
			for _, e := range effects[k] {
				says = append(says, e.Summary)
			}
			if len(says) > 0 {
				text += ": " + strings.Join(says, "; ")
			}
			table.Para(out, "    ", "      ", text)
		}
	} else {
		table.Para(out, "  Keys: ", "    ", strings.Join(b.Keys, ", "))
	}
	table.Para(out, "  Way out: ", "    ", b.WayOut+".")
}

// writeRefusedSummary ends the plan of a purge that --confirm would refuse.
// A purge is refused whole: as it stands nothing would be deleted. One line
// says so, one line per reason says how many keys need which flag, and the
// last says what would be deleted once every reason is met.
func writeRefusedSummary(out io.Writer, plan *repair.Plan, blockers []repair.Blocker) {
	fmt.Fprintln(out)
	table.Wrapped(out, fmt.Sprintf("Refused as it stands: a purge is refused whole, so --confirm would delete none of these %s (etcd revision %d):", keys(len(plan.Targets)), plan.Revision))
	for _, b := range blockers {
		n := len(b.Keys)
		need, it, rest := "needs", "it", "its ghost verdict rests"
		if n != 1 {
			need, it, rest = "need", "them", "their ghost verdicts rest"
		}
		var why string
		switch flag := b.Flag; {
		case flag == flagnames.AcceptSingleWitness:
			why = fmt.Sprintf("%s %s %s, or an API server to confirm %s: %s on one witness only", keys(n), need, flag, it, rest)
		case flag != "":
			var kinds []string
			effects := plan.BlockerEffects(b)
			for _, k := range b.Keys {
				for _, e := range effects[k] {
					if !slices.Contains(kinds, string(e.Kind)) {
						kinds = append(kinds, string(e.Kind))
					}
				}
			}
			why = fmt.Sprintf("%s %s %s: deleting %s sets off what a restore cannot undo (%s)", keys(n), need, flag, it, strings.Join(kinds, ", "))
		default:
			why = fmt.Sprintf("%s: %s", keys(n), b.Reason)
		}
		table.Para(out, "  ", "    ", why)
	}
	table.Wrapped(out, fmt.Sprintf("Given what each line needs, the %s in %s would be deleted. Nothing was changed.", keys(len(plan.Targets)), plan.Scope))
}

// PurgeResult is a finished purge; its rows are the keys with their outcome.
func PurgeResult(res *repair.PurgeResult) Output {
	return Output{Doc: res, Rows: ResultRows(res.Results), Human: func(w io.Writer, _, _ bool) error { return writePurgeResult(w, res) }}
}

// writePurgeResult writes a finished purge: the snapshot and the backup,
// the outcome of each key, and how to undo it (commands on lines of their
// own, whole).
func writePurgeResult(out io.Writer, res *repair.PurgeResult) error {
	fmt.Fprintln(out)
	if res.Snapshot != nil {
		Snapshot(out, "Snapshot from "+res.Endpoint+": ", res.Snapshot)
	}
	table.Wrapped(out, "Backup   "+res.Backup+" (verified)")
	fmt.Fprintln(out)
	Results(out, res.Results)
	fmt.Fprintln(out)
	table.Wrapped(out, fmt.Sprintf("Deleted %d of %s. Audit log: %s", res.Deleted, plural.Of(res.Planned, "planned key"), filepath.Join(res.Dir, backup.AuditFile)))
	table.LabeledCommand(out, "Undo these deletes:", "regghost restore "+res.Dir+" --confirm")
	if res.Snapshot != nil {
		fmt.Fprintln(out, "Disaster path (whole cluster; stop every kube-apiserver first):")
		command, note, _ := strings.Cut(snapshot.DisasterRestoreCommand(res.Snapshot), "   # ")
		if note != "" {
			table.Para(out, "  # ", "  # ", note)
		}
		table.Command(out, "  ", command)
	}
	return nil
}

// writeUnstickFirst names unstick before a plan that deletes objects stuck
// terminating on their finalizers: unstick ends that through the API
// server (the finalizer's cleanup, or its removal behind a backup), where
// a delete from etcd skips whatever the finalizer guards.
func writeUnstickFirst(out io.Writer, targets []etcdscan.Finding) {
	n := 0
	var namespaces []string
	for i := range targets {
		f := &targets[i]
		if !f.Has(etcdscan.ClassStuckTerminating) {
			continue
		}
		n++
		if f.Namespace != "" && !slices.Contains(namespaces, f.Namespace) {
			namespaces = append(namespaces, f.Namespace)
		}
	}
	if n == 0 {
		return
	}
	how := "`regghost unstick namespace NAME` (or `crd NAME`)"
	if len(namespaces) > 0 {
		sort.Strings(namespaces)
		how = "`regghost unstick namespace " + namespaces[0] + "`"
		if len(namespaces) > 1 {
			how += fmt.Sprintf(" (and each of the %d other namespaces)", len(namespaces)-1)
		}
	}
	table.Para(out, "", "  ", fmt.Sprintf("%s stuck terminating on finalizers: run %s first; it ends that through the API server, behind a backup. Deleting %s from etcd skips whatever %s finalizers guard (storage, cloud resources), which no restore brings back.",
		plural.Verb(n, "object", "is", "are"), how, plural.Them(n), plural.Pick(n, "its", "their")))
	fmt.Fprintln(out)
}
