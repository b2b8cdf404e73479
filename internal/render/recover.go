package render

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/plural"
	"github.com/regghost/regghost/pkg/protect"
	"github.com/regghost/regghost/pkg/recovery"
	"github.com/regghost/regghost/pkg/table"
)

// RecoveryCounts are how many of objs recover writes, and how many it
// refuses.
func RecoveryCounts(objs []*recovery.Object) (todo, refused int) {
	for _, obj := range objs {
		switch obj.Action {
		case recovery.Recover:
			todo++
		case recovery.Refused:
			refused++
		}
	}
	return todo, refused
}

// WriteRecoveryPlan writes where the objects come from, and each chosen
// object with what recover does with it; a detail cut to fit is written
// whole below the table.
func WriteRecoveryPlan(w io.Writer, from string, objs []*recovery.Object) {
	table.Para(w, "", "", fmt.Sprintf("From %s:", from))
	rows := make([]etcdwrite.Result, len(objs))
	for i, obj := range objs {
		detail := obj.Detail
		if len(obj.Notes) > 0 {
			detail = strings.TrimPrefix(detail+"; ", "; ") + strings.Join(obj.Notes, "; ")
		}
		rows[i] = etcdwrite.Result{Key: obj.Key, Outcome: etcdwrite.Outcome(obj.Action), Detail: detail}
	}
	Results(w, rows)
}

// RecoveryPlan is what recover would do (a dry run, or --confirm with
// nothing to write) in every form -o can ask for.
func RecoveryPlan(from string, objs []*recovery.Object, dryRun bool) Output {
	todo, refused := RecoveryCounts(objs)
	return Output{Doc: map[string]any{"dryRun": dryRun, "source": from, "objects": objs}, Human: func(w io.Writer, _, _ bool) error {
		WriteRecoveryPlan(w, from, objs)
		fmt.Fprintln(w)
		if todo == 0 {
			table.Wrapped(w, fmt.Sprintf("Nothing to recover: every chosen object (%d) is present already, changed since the source, or refused. Nothing was changed.", len(objs)))
		} else {
			table.Wrapped(w, fmt.Sprintf("Dry run: %d of %s would be recovered. Nothing was changed. Re-run with --confirm.", todo, plural.Of(len(objs), "object")))
		}
		if refused > 0 {
			table.Wrapped(w, fmt.Sprintf("Refused %s (each reason above).", plural.Of(refused, "object")))
		}
		return nil
	}}
}

// WriteRecoveryResult writes a finished recovery of todo objects: the
// outcome of each key, the backup and how to undo it.
func WriteRecoveryResult(out io.Writer, res *protect.Outcome, todo int) {
	n := 0
	for _, r := range res.Results {
		if r.Outcome == etcdwrite.Recovered {
			n++
		}
	}
	fmt.Fprintln(out)
	Results(table.NewSafeWriter(out), res.Results)
	fmt.Fprintln(out)
	table.Wrapped(out, fmt.Sprintf("Recovered %d of %s, byte-identical to the source. Backup %s (verified); audit log %s", n, plural.Of(todo, "object"), res.Dir, filepath.Join(res.Dir, backup.AuditFile)))
	table.LabeledCommand(out, "Undo the recovery (deletes what it wrote, if unchanged):", "regghost restore "+res.Dir+" --confirm")
}

// RecoveryRefusedError says why a dry run that refused objects fails;
// nil when none is refused.
func RecoveryRefusedError(objs []*recovery.Object) error {
	for _, obj := range objs {
		if obj.Action == recovery.Refused {
			return fmt.Errorf("some objects are refused (%s: %s)", table.Escape(obj.Key), table.Escape(obj.Detail))
		}
	}
	return nil
}

// ManifestsRefusedError says why manifests that leave refused objects out
// fail the command (part of what was selected cannot come back); nil when
// only objects already there were left out.
func ManifestsRefusedError(left []recovery.Left) error {
	n := 0
	var first recovery.Left
	for _, l := range left {
		if l.Action == recovery.Refused {
			if n == 0 {
				first = l
			}
			n++
		}
	}
	if n == 0 {
		return nil
	}
	return fmt.Errorf("%s refused and left out of the manifests (%s: %s)", plural.Of(n, "object"), table.Escape(first.Key), table.Escape(first.Reason))
}

// ManifestsLeftOut says on errOut which objects the manifests leave out,
// and why; withLive is whether --with-live was given.
func ManifestsLeftOut(errOut io.Writer, left []recovery.Left, withLive bool) {
	for _, l := range left {
		table.Wrapped(errOut, fmt.Sprintf("regghost: left out %s (%s): %s", l.Key, l.Action, l.Reason))
	}
	if len(left) > 0 && !withLive {
		table.Wrapped(errOut, fmt.Sprintf("regghost: %s left out of the manifests (each above); an object that exists live is printed only when asked for by key or --name with --with-live", plural.Of(len(left), "object")))
	}
}
