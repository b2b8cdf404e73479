package cmd

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"github.com/regghost/regghost/internal/table"
	"github.com/regghost/regghost/pkg/apiview"
	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/flagnames"
	"github.com/regghost/regghost/pkg/impact"
	"github.com/regghost/regghost/pkg/repair"
	"github.com/regghost/regghost/pkg/snapshot"
)

// defaultBackupRoot is where purge keeps snapshots and backups.
const defaultBackupRoot = "/var/lib/regghost/backups"

type purgeOptions struct {
	namespace        string
	keys             []string
	from             string
	forceClasses     []string
	confirm          bool
	yes              bool
	backupDir        string
	batchSize        int
	rate             float64
	terminatingAfter time.Duration
	print            *printFlags
	singleWitness    bool
	retainVolumes    bool
	acceptImpacts    []string
}

func newPurgeCmd(g *globalOptions) *cobra.Command {
	o := &purgeOptions{}
	c := &cobra.Command{
		Use:   "purge [KEY...]",
		Short: "Delete ghost keys behind a verified snapshot and backup (dry run without --confirm)",
		Long: `purge scans, then deletes only the keys the scan classifies as ghosts in the
namespace (--namespace) or among the exact keys given as arguments. Without
--confirm it only lists them. (--key is etcd's TLS client key, as in etcdctl.)

With --confirm, before the first delete it:
  1. checks the backup directory has room for a snapshot and the backup,
  2. streams a full etcd snapshot, fsyncs it, checks its sha256 and bbolt consistency,
  3. checks every key to delete is in the snapshot with the same revision and bytes,
  4. writes a per-key backup (raw bytes, revisions, lease) with a checksum and reads it back.
Each delete is a transaction that compares the key's mod revision with the scan's:
a key changed since is skipped, never deleted. Every key is read back afterwards
and a line per key is appended to audit.log in the backup directory.`,
		Example: `  regghost purge --namespace kb-system
  regghost purge --namespace kb-system --confirm
  regghost scan --namespace kb-system -o json > plan.json   # review it, then:
  regghost purge --namespace kb-system --from plan.json --confirm
  regghost purge /registry/pods/kb-system/p1 --confirm`,
		RunE: func(c *cobra.Command, args []string) error {
			o.keys = args
			if err := validateScanInput(o.namespace); err != nil {
				return err
			}
			if err := o.print.validate(); err != nil {
				return err
			}
			return runPurge(c.Context(), g, o, c.InOrStdin(), c.OutOrStdout())
		},
	}
	f := c.Flags()
	f.StringVarP(&o.namespace, "namespace", "n", "", "purge the ghosts of this namespace")
	f.StringVar(&o.from, "from", "", "a reviewed `scan -o json` report: purge only its keys, and only if unchanged since")
	f.StringArrayVar(&o.forceClasses, "force-class", nil, "also purge suspects of this class (stuck-terminating, dangling-owner, unserved-now, resurrected; never disputed)")
	f.BoolVar(&o.confirm, "confirm", false, "really delete (without it purge is a dry run)")
	f.BoolVar(&o.yes, "yes", false, "confirm without a prompt when stdin is not a terminal")
	f.StringVar(&o.backupDir, "backup-dir", envOr("REGGHOST_BACKUP_DIR", defaultBackupRoot), "where snapshots and backups go (env REGGHOST_BACKUP_DIR)")
	f.IntVar(&o.batchSize, "batch-size", etcdwrite.DefaultBatchSize, "keys per delete transaction (at most 128, etcd's default --max-txn-ops)")
	f.Float64Var(&o.rate, "rate", etcdwrite.DefaultRate, "delete transactions per second")
	o.print = newPrintFlags(true, "table")
	f.DurationVar(&o.terminatingAfter, "terminating-after", etcdscan.DefaultTerminatingAfter, "stuck-terminating threshold used by the scan")
	o.print.addFlags(c)
	f.BoolVar(&o.retainVolumes, impact.RetainVolumesFlag[2:], false, "set each bound PersistentVolume whose reclaim policy would destroy its storage to Retain (through the API server, backed up) before deleting its claim")
	f.StringArrayVar(&o.acceptImpacts, impact.AcceptImpactFlag[2:], nil, "go ahead although deleting sets this off, which a restore cannot undo: "+acceptableKinds())
	f.BoolVar(&o.singleWitness, strings.TrimPrefix(flagnames.AcceptSingleWitness, "--"), false, "also delete ghosts only one witness could confirm (the API server could not be asked); the dry run lists them")
	return c
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func runPurge(ctx context.Context, g *globalOptions, o *purgeOptions, in io.Reader, out io.Writer) error {
	if err := refuseDB(g, "purge"); err != nil {
		return err
	}
	if o.batchSize < 1 || o.batchSize > 128 {
		return usageError("--batch-size must be between 1 and 128, got %d", o.batchSize)
	}
	if o.rate <= 0 {
		return usageError("--rate must be positive, got %g", o.rate)
	}
	if o.terminatingAfter <= 0 {
		return usageError("--terminating-after must be positive, got %s", o.terminatingAfter)
	}
	sel := repair.Selector{Namespace: o.namespace, Keys: o.keys, AcceptSingleWitness: o.singleWitness}
	for _, s := range o.forceClasses {
		c, ok := etcdscan.ParseClass(s)
		if !ok {
			return usageError("--force-class %q is not a class", s)
		}
		sel.ForceClasses = append(sel.ForceClasses, c)
	}
	impactOpts := impact.Options{RetainVolumes: o.retainVolumes}
	for _, s := range o.acceptImpacts {
		k, err := impact.ParseKind(s)
		if err != nil {
			return usageError("%s: %v", impact.AcceptImpactFlag, err)
		}
		impactOpts.Accept = append(impactOpts.Accept, k)
	}
	if o.from != "" {
		rep, err := etcdscan.ReadReport(o.from)
		if err != nil {
			return err
		}
		sel.Reviewed = rep
	}
	if o.namespace == "" && len(o.keys) == 0 {
		return usageError("purge needs --namespace or exact keys as arguments; a purge of the whole keyspace is not allowed")
	}
	plan, view, err := planPurge(ctx, g, o, sel, impactOpts)
	if err != nil {
		return err
	}
	if !o.confirm {
		return o.print.print(out, planOutput(plan, true))
	}
	if len(plan.Targets) == 0 {
		return o.print.print(out, planOutput(plan, false))
	}
	if err := plan.Refusal(); err != nil {
		if perr := o.print.print(out, planOutput(plan, true)); perr != nil {
			return perr
		}
		return err
	}
	// In a machine format stdout holds the result alone; the plan is shown
	// with the question, on stderr.
	planOut := out
	if o.print.structured() {
		planOut = g.errOut
	}
	if err := printPlan(table.NewSafeWriter(planOut), plan, false); err != nil {
		return err
	}
	fmt.Fprintf(planOut, "\nA snapshot and a backup go to %s first.\n", o.backupDir)
	if err := confirmAction(in, g.errOut, o.yes, fmt.Sprintf("Delete %d keys (%s) from etcd?", len(plan.Targets), plan.Scope)); err != nil {
		return err
	}
	ctx, cli, done, err := g.session(ctx)
	if err != nil {
		return err
	}
	defer done()
	cfg, err := g.etcd.ClientConfig()
	if err != nil {
		return err
	}
	dec, err := g.decrypter(ctx)
	if err != nil {
		return err
	}
	popts := repair.PurgeOptions{BackupRoot: o.backupDir, Client: cli, ClientConfig: cfg, Now: clock, Notices: g.errOut,
		Decrypt: identityDecrypter(dec), Pacing: etcdwrite.Pacing{BatchSize: o.batchSize, PerSecond: o.rate}}
	if len(plan.Impact.VolumesToRetain()) > 0 && o.retainVolumes {
		if view == nil {
			return fmt.Errorf("%s needs the API server (it could not be reached); nothing was changed", impact.RetainVolumesFlag)
		}
		if popts.Kube, err = kubernetes.NewForConfig(view.Config); err != nil {
			return fmt.Errorf("api server client: %w", err)
		}
	}
	stop, doneWriting := stopOnSignal(g.errOut)
	defer doneWriting()
	popts.Pacing.Stop = stop
	res, err := repair.Purge(ctx, plan, popts)
	if res == nil && err != nil {
		return err
	}
	if perr := o.print.print(out, purgeResultOutput(res)); perr != nil && err == nil {
		err = perr
	}
	if err != nil {
		return err
	}
	if res.Deleted != res.Planned {
		return &exitError{code: ExitGhosts, err: fmt.Errorf("deleted %d of %d planned keys; the rest were left alone (see above)", res.Deleted, res.Planned)}
	}
	return nil
}

// planPurge makes the plan (repair.PlanPurge) with one connection to etcd
// and the API server, and returns the API server it used, if any.
func planPurge(ctx context.Context, g *globalOptions, o *purgeOptions, sel repair.Selector, io impact.Options) (*repair.Plan, *apiview.View, error) {
	ctx, cancel := context.WithTimeout(ctx, g.etcd.CommandTimeout)
	defer cancel()
	rs, err := g.openRead(ctx, scanReads())
	if err != nil {
		return nil, nil, err
	}
	defer rs.close()
	po := repair.PlanOptions{Store: rs.store, Selector: sel, Impact: io, Scan: func(ctx context.Context) (*etcdscan.Report, error) {
		return rs.scan(ctx, g, o.namespace, o.terminatingAfter, etcdscan.DefaultAPICheckLimit)
	}}
	if rs.dec != nil {
		po.Readers.Decrypter = rs.dec
	}
	if rs.view != nil {
		po.Readers.API = rs.view
	}
	plan, err := repair.PlanPurge(ctx, po)
	if err != nil {
		return nil, nil, err
	}
	return plan, rs.view, nil
}

// planOutput is a purge plan (a dry run) in every form -o can ask for;
// its rows are the keys that would be deleted.
func planOutput(plan *repair.Plan, dryRun bool) output {
	rows := make([]row, len(plan.Targets))
	for i := range plan.Targets {
		rows[i] = row{name: plan.Targets[i].Key, obj: &plan.Targets[i]}
	}
	return output{doc: map[string]any{"dryRun": dryRun, "scope": plan.Scope, "revision": plan.Revision,
		"targets": nonNil(plan.Targets), "skipped": nonNil(plan.Skipped), "blockers": nonNil(plan.Blockers()),
		"impact": plan.Impact}, rows: rows,
		human: func(w io.Writer, _, _ bool) error { return printPlan(w, plan, dryRun) }}
}

// printPlan writes what a purge would delete: the grouped table (IMPACT cut
// to fit, whole in -o wide), what would be refused with the way out of
// each, as wrapped paragraphs, and for a dry run a summary that counts what
// would be deleted and what would be refused, one line each.
func printPlan(out io.Writer, plan *repair.Plan, dryRun bool) error {
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
			table.Wrapped(out, fmt.Sprintf("* %d rest on a single witness (the API server could not confirm them)", single))
		}
	}
	if len(plan.Skipped) > 0 {
		fmt.Fprintln(out)
		printResults(out, plan.Skipped)
	}
	blockers := plan.Blockers()
	for _, b := range blockers {
		printBlocker(out, plan, b)
	}
	switch {
	case len(plan.Targets) == 0:
		fmt.Fprintf(out, "No ghost to purge in %s at etcd revision %d; nothing was changed.\n", plan.Scope, plan.Revision)
	case len(blockers) > 0:
		printRefusedSummary(out, plan, blockers)
	case dryRun:
		fmt.Fprintln(out)
		table.Wrapped(out, fmt.Sprintf("Dry run: %s in %s would be deleted (etcd revision %d). Nothing was changed.", keys(len(plan.Targets)), plan.Scope, plan.Revision))
		fmt.Fprintln(out, "Re-run with --confirm to snapshot, back up and delete them.")
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

// printBlocker writes one reason a confirmed purge would be refused, as
// paragraphs: the reason, the keys (each with the irreversible effects it
// sets off, when there are several), the way out.
func printBlocker(out io.Writer, plan *repair.Plan, b repair.Blocker) {
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

// printRefusedSummary ends the plan of a purge that --confirm would refuse.
// A purge is refused whole: as it stands nothing would be deleted. One line
// says so, one line per reason says how many keys need which flag, and the
// last says what would be deleted once every reason is met.
func printRefusedSummary(out io.Writer, plan *repair.Plan, blockers []repair.Blocker) {
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

// keys is "1 key" or "n keys".
func keys(n int) string {
	if n == 1 {
		return "1 key"
	}
	return fmt.Sprintf("%d keys", n)
}

// printResults writes the outcome of each key, in order. DETAIL is cut to
// fit; each detail cut is written whole below the table, on lines of its
// own under its outcome and key (or how many keys share it), wrapped.
func printResults(out io.Writer, results []etcdwrite.Result) {
	if len(results) == 0 {
		return
	}
	t := table.New(out, "KEY", "OUTCOME", "DETAIL")
	t.Quiet = true
	for _, r := range results {
		_ = t.Append([]string{r.Key, string(r.Outcome), r.Detail})
	}
	_ = t.Render()
	if !t.WasCut() {
		return
	}
	type group struct {
		outcome etcdwrite.Outcome
		detail  string
		keys    []string
	}
	var groups []*group
	byDetail := map[string]*group{}
	for _, r := range results {
		detail := table.Escape(r.Detail)
		if table.TextWidth(detail) <= t.Widths()[2] {
			continue
		}
		id := string(r.Outcome) + "\x00" + detail
		g := byDetail[id]
		if g == nil {
			g = &group{outcome: r.Outcome, detail: detail}
			byDetail[id] = g
			groups = append(groups, g)
		}
		g.keys = append(g.keys, table.Escape(r.Key))
	}
	if len(groups) == 0 {
		return
	}
	fmt.Fprintln(out)
	for _, g := range groups {
		who := g.keys[0]
		if len(g.keys) > 1 {
			who = fmt.Sprintf("(%d keys)", len(g.keys))
		}
		table.Para(out, "", "  ", fmt.Sprintf("%s %s:", g.outcome, who))
		table.Para(out, "  ", "  ", g.detail)
	}
}

// purgeResultOutput is a finished purge; its rows are the keys with their outcome.
func purgeResultOutput(res *repair.PurgeResult) output {
	return output{doc: res, rows: resultRows(res.Results), human: func(w io.Writer, _, _ bool) error { return printPurgeResult(w, res) }}
}

// resultRows are the keys of a repair with their outcome.
func resultRows(results []etcdwrite.Result) []row {
	rows := make([]row, len(results))
	for i := range results {
		rows[i] = row{name: results[i].Key, obj: &results[i]}
	}
	return rows
}

// printPurgeResult writes a finished purge: the snapshot and the backup,
// the outcome of each key, and how to undo it (commands on lines of their
// own, whole).
func printPurgeResult(out io.Writer, res *repair.PurgeResult) error {
	fmt.Fprintln(out)
	if res.Snapshot != nil {
		printSnapshot(out, "Snapshot from "+res.Endpoint+": ", res.Snapshot)
	}
	table.Wrapped(out, "Backup   "+res.Backup+" (verified)")
	fmt.Fprintln(out)
	printResults(out, res.Results)
	fmt.Fprintln(out)
	table.Wrapped(out, fmt.Sprintf("Deleted %d of %d planned keys. Audit log: %s", res.Deleted, res.Planned, filepath.Join(res.Dir, backup.AuditFile)))
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

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
