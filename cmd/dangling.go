package cmd

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/regghost/regghost/internal/cli"
	"github.com/regghost/regghost/internal/render"
	"github.com/regghost/regghost/pkg/dangling"
	"github.com/regghost/regghost/pkg/flagnames"
	"github.com/regghost/regghost/pkg/plural"
	"github.com/regghost/regghost/pkg/session"
	"github.com/regghost/regghost/pkg/table"
)

type danglingOptions struct {
	noCompletion
	cli.WriteFlags
	namespace     string
	acceptManaged bool
	singleWitness bool
	*render.PrintFlags
}

func newDanglingCmd(g *globalOptions) *cobra.Command {
	o := &danglingOptions{PrintFlags: render.NewPrintFlags(true, "table")}
	c := &cobra.Command{
		Use:   "dangling",
		Short: "List references into what is gone (webhooks, APIServices, bindings) and fix them",
		Args:  cobra.NoArgs,
		RunE:  runE(g, o),
	}
	f := c.Flags()
	f.StringVarP(&o.namespace, "namespace", "n", "", "only the references this namespace holds or that point into it")
	o.WriteFlags.Add(c, "really fix them (without it dangling only lists them)", "where the per-key backup goes")
	f.BoolVar(&o.acceptManaged, dangling.AcceptManagedFlag[2:], false, "also fix objects Helm, Argo CD or Flux track (they may put them back)")
	f.BoolVar(&o.singleWitness, strings.TrimPrefix(flagnames.AcceptSingleWitness, "--"), false, "also fix references only etcd confirms (the API server could not be asked)")
	o.AddFlags(c)
	return c
}

func (o *danglingOptions) validate(g *globalOptions) error {
	if err := validateScanInput(o.namespace); err != nil {
		return err
	}
	if o.Confirm {
		return refuseDB(g, "dangling --confirm")
	}
	return nil
}

func (o *danglingOptions) run(ctx context.Context, g *globalOptions, s genericiooptions.IOStreams) error {
	rs, err := g.Open(ctx, session.ScanReads())
	if err != nil {
		return err
	}
	defer rs.Close()
	rep, err := rs.Scan(ctx, g.scanning(session.ScanOptions{Namespace: o.namespace}, false))
	if err != nil {
		return err
	}
	rep.Close() // only its dangling references are read
	fixes, refused := dangling.PlanFixes(rep.Dangling, dangling.PlanOptions{AcceptManaged: o.acceptManaged, AcceptSingleWitness: o.singleWitness})
	if !o.Confirm || len(fixes) == 0 {
		if err := o.Print(s.Out, render.DanglingPlan(rep.Dangling, fixes, refused, o.Confirm)); err != nil {
			return err
		}
		if o.Confirm && len(refused) > 0 {
			return cli.Exit(ExitError, fmt.Errorf("refused: %s (%s); nothing was changed", refused[0].Reason, refused[0].WayOut))
		}
		if rep.DanglingGoneCount() > 0 {
			// Found, as scan says it: a reference whose target is gone.
			return cli.Exit(ExitGhosts, nil)
		}
		return nil
	}
	planOut := o.PlanWriter(s.Out, s.ErrOut)
	render.WriteDanglingPlan(table.NewSafeWriter(planOut), rep.Dangling, fixes, refused)
	dyn, err := rs.Dynamic("fixes go")
	if err != nil {
		return err
	}
	if err := o.Ask(s.In, s.ErrOut, fmt.Sprintf("Fix %s through the API server?", render.Plural(len(fixes), "object"))); err != nil {
		return err
	}
	res, err := g.FixDangling(ctx, rs, session.DanglingFix{Fixes: fixes, Dynamic: dyn, Namespace: o.namespace, BackupRoot: o.BackupDir, Now: clock})
	if res == nil && err != nil {
		return err
	}
	err = o.PrintResult(s.Out, render.DanglingResult(rep.Dangling, fixes, refused, res), err)
	if err == nil && len(refused) > 0 {
		err = cli.Exit(ExitError, fmt.Errorf("%d references were refused: %s (%s)", len(refused), refused[0].Reason, refused[0].WayOut))
	}
	if n := dangling.Unfixed(rep.Dangling, fixes, refused, res.Results); err == nil && n > 0 {
		// Fixed what has a fix; the others are still there.
		err = cli.Exit(ExitGhosts, fmt.Errorf("%s whose target is gone %s left: no automatic fix exists for %s (each one's fix line says what does)", render.Plural(n, "reference"), plural.Be(n), plural.Them(n)))
	}
	return err
}
