package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"

	"github.com/regghost/regghost/internal/table"
	"github.com/regghost/regghost/pkg/catalog"
	"github.com/regghost/regghost/pkg/dangling"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/impact"
	"github.com/regghost/regghost/pkg/objread"
	"github.com/regghost/regghost/pkg/unstick"
)

type unstickOptions struct {
	confirm   bool
	yes       bool
	backupDir string
	wait      time.Duration
	print     *printFlags
	// acceptManaged deletes a dangling APIService Helm, Argo CD or Flux tracks.
	acceptManaged bool
	// acceptImpacts are --accept-impact's words; accept the kinds they name.
	acceptImpacts []string
	accept        []impact.Kind
}

func newUnstickCmd(g *globalOptions) *cobra.Command {
	o := &unstickOptions{print: newPrintFlags(true, "table")}
	c := &cobra.Command{
		Use:   "unstick namespace|crd NAME",
		Short: "Explain why a namespace or CRD is stuck terminating, and finish its deletion without making ghosts (dry run without --confirm)",
		Long: `unstick reads the namespace (or CustomResourceDefinition) and what is left of it
in etcd, its status conditions, the objects whose finalizers hold it, whether
anything still serves each finalizer, and the APIServices that are unavailable,
and ends with the next action.

With --confirm it removes the blocking finalizers through the API server, never
by editing etcd, each patch preconditioned on the resourceVersion reviewed here;
before the first patch the keys it touches go into a verified per-key backup that
'regghost restore' puts back. Then it waits for the deletion to finish and checks
that nothing of it is left in etcd. It refuses while an API the namespace
controller needs is unavailable.`,
		Example: `  regghost unstick namespace kb-system
  regghost unstick namespace kb-system --confirm
  regghost unstick crd widgets.example.com --confirm`,
		Args: cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			kind, name := args[0], args[1]
			switch kind {
			case "namespace", "ns":
				if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
					return usageError("%q is not a namespace name: %s", name, errs[0])
				}
			case "crd", "customresourcedefinition":
				if _, ok := catalog.CustomFromCRDName(name); !ok {
					return usageError("%q is not a CustomResourceDefinition name (<plural>.<group>)", name)
				}
			default:
				return usageError("unstick takes namespace NAME or crd NAME, not %q", kind)
			}
			if err := o.print.validate(); err != nil {
				return err
			}
			for _, s := range o.acceptImpacts {
				k, err := impact.ParseKind(s)
				if err != nil {
					return usageError("%s: %v", impact.AcceptImpactFlag, err)
				}
				o.accept = append(o.accept, k)
			}
			if o.confirm {
				if err := refuseDB(g, "unstick --confirm"); err != nil {
					return err
				}
			}
			if o.wait <= 0 || o.wait >= g.etcd.CommandTimeout {
				return usageError("--wait must be positive and shorter than --command-timeout (%s), got %s", g.etcd.CommandTimeout, o.wait)
			}
			return runUnstick(c.Context(), g, o, kind, name, c.InOrStdin(), c.OutOrStdout())
		},
	}
	f := c.Flags()
	f.BoolVar(&o.confirm, "confirm", false, "really remove the blocking finalizers (without it unstick only explains)")
	f.BoolVar(&o.yes, "yes", false, "confirm without a prompt when stdin is not a terminal")
	f.StringVar(&o.backupDir, "backup-dir", envOr("REGGHOST_BACKUP_DIR", defaultBackupRoot), "where the per-key backup goes (env REGGHOST_BACKUP_DIR)")
	f.DurationVar(&o.wait, "wait", 2*time.Minute, "how long to wait for the deletion to finish")
	f.BoolVar(&o.acceptManaged, dangling.AcceptManagedFlag[2:], false, "also delete a dangling APIService that Helm, Argo CD or Flux tracks")
	f.StringArrayVar(&o.acceptImpacts, impact.AcceptImpactFlag[2:], nil, "remove a finalizer although its controller (outside kube-controller-manager) is known to leave this behind, which a restore cannot undo: "+acceptableKinds())
	o.print.addFlags(c)
	return c
}

func runUnstick(ctx context.Context, g *globalOptions, o *unstickOptions, kind, name string, in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, g.etcd.CommandTimeout)
	defer cancel()
	rs, err := g.openRead(ctx, scanReads())
	if err != nil {
		return err
	}
	defer rs.close()
	var served *catalog.Catalog
	if rs.view != nil {
		if served, err = rs.view.Catalog(ctx); err != nil {
			return err
		}
	}
	analyse := unstick.Namespace
	if kind != "namespace" && kind != "ns" {
		analyse = unstick.CRD
	}
	readers := unstick.Readers{Served: served}
	if rs.view != nil {
		readers.API = rs.view
	}
	if rs.dec != nil {
		readers.Decrypter = rs.dec
	}
	a, err := analyse(ctx, rs.store, g.prefix, name, readers, clock())
	if err != nil {
		return err
	}
	if len(o.accept) > 0 {
		a.Accept(o.accept)
	}
	if len(a.UnavailableNames) > 0 {
		// Follow the chain: is the APIService that holds discovery
		// dangling (its Service gone) or down?
		refs, _, err := dangling.Find(ctx, rs.store, dangling.Options{Registry: g.prefix, Reader: &objread.Reader{Registry: g.prefix, API: readers.API, Decrypter: readers.Decrypter}, API: rs.apiGetter()})
		if err != nil {
			return err
		}
		a.Follow(dangling.WithoutGhosts(refs))
	}
	blockerRows := make([]row, len(a.Blockers))
	for i := range a.Blockers {
		blockerRows[i] = row{name: a.Blockers[i].Key, obj: &a.Blockers[i]}
	}
	if !o.confirm {
		return o.print.print(out, output{doc: a, rows: blockerRows, human: func(w io.Writer, _, _ bool) error {
			printAnalysis(w, a)
			if a.Refusal != "" && a.Exists && a.Terminating {
				fmt.Fprintln(w)
				table.Para(w, "Would be refused: ", "  ", a.Refusal+".")
			} else if a.Refusal == "" {
				fmt.Fprintln(w, "\nDry run: nothing was changed. Re-run with --confirm to remove the finalizers above.")
			}
			return nil
		}})
	}
	// In a machine format stdout holds the result alone; the analysis is
	// shown with the question, on stderr.
	analysisOut := out
	if o.print.structured() {
		analysisOut = g.errOut
	}
	printAnalysis(table.NewSafeWriter(analysisOut), a)
	if a.Refusal != "" {
		return &exitError{code: ExitError, err: fmt.Errorf("refused: %s; nothing was changed", a.Refusal)}
	}
	if rs.view == nil {
		return &exitError{code: ExitError, err: fmt.Errorf("refused: unstick works through the API server (%s); nothing was changed", rs.why)}
	}
	dyn, err := dynamic.NewForConfig(rs.view.Config)
	if err != nil {
		return fmt.Errorf("api server client: %w", err)
	}
	question := fmt.Sprintf("Remove the finalizers of %d objects through the API server?", len(a.Blockers))
	if len(a.DeleteAPIServices) > 0 {
		question = fmt.Sprintf("Delete %d dangling APIServices through the API server?", len(a.DeleteAPIServices))
	}
	if err := confirmAction(in, g.errOut, o.yes, question); err != nil {
		return err
	}
	sctx, cli, done, err := g.session(ctx)
	if err != nil {
		return err
	}
	defer done()
	dec, err := g.decrypter(sctx)
	if err != nil {
		return err
	}
	res, err := unstick.Resolve(sctx, a, g.prefix, unstick.ResolveOptions{AcceptManaged: o.acceptManaged,
		Options: unstick.Options{Client: cli, Dynamic: dyn, BackupRoot: o.backupDir, Wait: o.wait, Now: clock, Notices: g.errOut, Decrypt: identityDecrypter(dec),
			Analyze: func(ctx context.Context) (*unstick.Analysis, error) {
				live, err := etcdscan.NewEtcdStore(ctx, cli, etcdscan.DefaultPageSize)
				if err != nil {
					return nil, err
				}
				// Discovery is asked again: an APIService deleted since the
				// first analysis no longer fails its group.
				fresh := readers
				if rs.view != nil {
					if fresh.Served, err = rs.view.Catalog(ctx); err != nil {
						return nil, err
					}
				}
				again, err := analyse(ctx, live, g.prefix, name, fresh, clock())
				if err == nil && len(o.accept) > 0 {
					again.Accept(o.accept)
				}
				return again, err
			}}})
	if res == nil && err != nil {
		if errors.Is(err, unstick.ErrRefused) {
			return &exitError{code: ExitError, err: err}
		}
		return err
	}
	if perr := o.print.print(out, output{doc: map[string]any{"analysis": a, "result": res}, rows: resultRows(res.Results), human: func(out io.Writer, _, _ bool) error {
		fmt.Fprintf(out, "\nBackup %s (verified)\n\n", res.Backup)
		printResults(out, res.Results)
		switch {
		case res.Finished && res.Left == 0:
			fmt.Fprintf(out, "\n%s is gone, and nothing of it is left in etcd.\n", a.Target)
		case res.Finished:
			fmt.Fprintf(out, "\n%s is gone, but %d of its keys are left in etcd: ghosts (see regghost scan).\n", a.Target, res.Left)
		default:
			fmt.Fprintf(out, "\n%s is still there after %s; %d keys of it are left in etcd.\n", a.Target, o.wait, res.Left)
		}
		for _, dir := range res.Dirs {
			if res.Finished {
				table.Para(out, "", "  ", fmt.Sprintf("Backup of what was changed: %s (a restore would put the objects back into a %s that no longer exists: ghosts)", dir, strings.Fields(a.Target)[0]))
			} else {
				table.LabeledCommand(out, "Undo:", "regghost restore "+dir+" --confirm")
			}
		}
		return nil
	}}); perr != nil && err == nil {
		err = perr
	}
	if err != nil {
		return err
	}
	if !res.Finished || res.Left > 0 {
		return &exitError{code: ExitError, err: fmt.Errorf("%s did not finish cleanly (%d keys left)", a.Target, res.Left)}
	}
	return nil
}

// printAnalysis writes the chain that holds a deletion, and the next action,
// wrapped to the screen. The blockers are a table whose rows are grouped by
// what serves their finalizers, said once above each group as scan says
// its reasons (-o wide: a SERVED BY column instead).
func printAnalysis(out io.Writer, a *unstick.Analysis) {
	switch {
	case !a.Exists:
		table.Wrapped(out, fmt.Sprintf("%s: no %s key.", a.Target, a.Key))
	case a.Terminating:
		table.Wrapped(out, fmt.Sprintf("%s: Terminating for %s; finalizers [%s]", a.Target, a.Since, strings.Join(a.Finalizers, ", ")))
	default:
		table.Wrapped(out, fmt.Sprintf("%s: not terminating.", a.Target))
	}
	for _, c := range a.Conditions {
		table.Para(out, "  condition ", "    ", c)
	}
	for _, u := range a.Unavailable {
		table.Para(out, "  unavailable: ", "    ", u)
	}
	fmt.Fprintf(out, "  %d keys left in etcd, %d held by finalizers\n", a.Remaining, len(a.Blockers))
	if len(a.Blockers) > 0 {
		wide := table.Full(out)
		hdr := []string{"KEY", "FINALIZERS", "TO REMOVE"}
		if wide {
			hdr = append(hdr, "SERVED BY")
		}
		t := table.New(out, hdr...).CutFirst(1, 2)
		cells := func(b unstick.Blocker) []string {
			fins := strings.Join(b.Finalizers, ", ")
			if b.Spec {
				fins = "spec: " + fins
			}
			return []string{b.Key, fins, strings.Join(b.Remove, ", ")}
		}
		var order []string
		byServed := map[string][]unstick.Blocker{}
		for _, b := range a.Blockers {
			served := strings.Join(b.Served, "; ")
			if wide {
				_ = t.Append(append(cells(b), served))
				continue
			}
			if _, ok := byServed[served]; !ok {
				order = append(order, served)
			}
			byServed[served] = append(byServed[served], b)
		}
		// Blockers whose finalizers nothing is said to serve first: no
		// comment line above them.
		table.EmptyFirst(order)
		for _, served := range order {
			if served != "" {
				t.Comment(served)
			}
			for _, b := range byServed[served] {
				_ = t.Append(cells(b))
			}
		}
		_ = t.Render()
	}
	for _, u := range a.Unreadable {
		table.Para(out, "  cannot be read here: ", "    ", u)
	}
	table.Wrapped(out, fmt.Sprintf("Next: %s.", a.Next))
}
