package cmd

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/regghost/regghost/internal/cli"
	"github.com/regghost/regghost/internal/render"
	"github.com/regghost/regghost/pkg/dangling"
	"github.com/regghost/regghost/pkg/impact"
	"github.com/regghost/regghost/pkg/plural"
	"github.com/regghost/regghost/pkg/session"
	"github.com/regghost/regghost/pkg/table"
	"github.com/regghost/regghost/pkg/unstick"
)

type unstickOptions struct {
	cli.WriteFlags
	// namespace is -n, the namespace as every other command takes it.
	namespace string
	wait      time.Duration
	*render.PrintFlags
	// acceptManaged deletes a dangling APIService Helm, Argo CD or Flux tracks.
	acceptManaged bool
	// acceptImpacts are --accept-impact's words; accept the kinds they name.
	acceptImpacts []string
	accept        []impact.Kind
	// deleteUnavailable are down APIServices to delete, backed up.
	deleteUnavailable []string
	// Completed:
	target    unstick.Target
	waitGiven bool
}

func newUnstickCmd(g *globalOptions) *cobra.Command {
	o := &unstickOptions{PrintFlags: render.NewPrintFlags(true, "table")}
	c := &cobra.Command{
		Use:   "unstick namespace|crd NAME | ns/NAME | crd/NAME | -n NAME",
		Short: "Explain why a namespace or CRD is stuck terminating, and finish it",
		Args:  cobra.RangeArgs(0, 2),
		RunE:  runE(g, o),
	}
	f := c.Flags()
	f.StringVarP(&o.namespace, "namespace", "n", "", "the namespace stuck terminating (as namespace NAME)")
	o.WriteFlags.Add(c, "really remove the blocking finalizers (without it unstick only explains)", "where the per-key backup goes")
	f.DurationVar(&o.wait, "wait", 2*time.Minute, "how long to wait for the deletion to finish")
	f.BoolVar(&o.acceptManaged, dangling.AcceptManagedFlag[2:], false, "also delete a dangling APIService that Helm, Argo CD or Flux tracks")
	f.StringArrayVar(&o.deleteUnavailable, unstick.DeleteUnavailableFlag[2:], nil, "delete this APIService although its Service is only down (metrics-server without endpoints), backed up: the namespace deletion goes on, its clients (kubectl top, HorizontalPodAutoscalers) stop until 'regghost restore' puts it back (repeatable)")
	f.StringArrayVar(&o.acceptImpacts, impact.AcceptImpactFlag[2:], nil, "remove a finalizer although its controller (outside kube-controller-manager) is known to leave this behind, which a restore cannot undo: "+impact.Names(impact.StripAcceptable()))
	o.AddFlags(c)
	return c
}

// complete reads the target from the arguments or -n.
func (o *unstickOptions) complete(_ *globalOptions, c *cobra.Command, args []string) error {
	if o.namespace != "" {
		if len(args) > 0 {
			return cli.Usage("give the target once: -n %s, or namespace NAME (not both)", o.namespace)
		}
		args = []string{"namespace", o.namespace}
	}
	if len(args) == 0 {
		return cli.Usage("unstick takes what is stuck: namespace NAME, ns/NAME, -n NAME, or crd NAME")
	}
	target, err := unstick.ParseArgs(args)
	if err != nil {
		return cli.Usage("%v", err)
	}
	o.target, o.waitGiven = target, c.Flags().Changed("wait")
	return nil
}

func (o *unstickOptions) validate(g *globalOptions) error {
	var err error
	if o.accept, err = impact.ParseStripKinds(o.acceptImpacts); err != nil {
		return err
	}
	if o.Confirm {
		if err := refuseDB(g, "unstick --confirm"); err != nil {
			return err
		}
	}
	return cli.WaitFits(o.wait, g.Etcd.CommandTimeout, o.waitGiven)
}

func (o *unstickOptions) run(ctx context.Context, g *globalOptions, s genericiooptions.IOStreams) error {
	rs, err := g.Open(ctx, session.ScanReads())
	if err != nil {
		return err
	}
	defer rs.Close()
	z := &unstick.Analyzer{Read: rs, Target: o.target, Accept: o.accept, DeleteUnavailable: o.deleteUnavailable, Now: clock}
	a, err := z.Analyze(ctx)
	if err != nil {
		return err
	}
	if a.Nowhere {
		return cli.Failed(a.NowhereError())
	}
	if !o.Confirm {
		if err := o.Print(s.Out, render.UnstickPlan(a)); err != nil {
			return err
		}
		if a.NoAPI != "" && !rs.DB && !g.NoAPI {
			// The API server was expected and did not answer: the plan
			// cannot be carried out as shown.
			return cli.Failed(fmt.Errorf("refused: unstick works through the API server, which was not reached (%s); nothing was changed", a.NoAPI))
		}
		return nil
	}
	analysisOut := o.PlanWriter(s.Out, s.ErrOut)
	render.UnstickAnalysis(table.NewSafeWriter(analysisOut), a)
	if a.Refusal != "" {
		return cli.Exit(ExitError, fmt.Errorf("refused: %s; nothing was changed", a.Refusal))
	}
	dyn, err := rs.Dynamic("unstick works")
	if err != nil {
		return err
	}
	question := render.UnstickQuestion(a)
	if err := o.Ask(s.In, s.ErrOut, question); err != nil {
		return err
	}
	res, err := z.Finish(ctx, &g.Settings, a, unstick.ResolveOptions{AcceptManaged: o.acceptManaged,
		ConfirmRevealed: func(more []unstick.Blocker) error {
			render.WriteRevealed(s.ErrOut, more)
			return o.AskAgain(s.In, s.ErrOut, fmt.Sprintf("Also remove the finalizers of %s, which the plan did not show?", plural.Of(len(more), "more object")))
		},
		Options: unstick.Options{Dynamic: dyn, BackupRoot: o.BackupDir, Wait: o.wait, Now: clock}})
	if res == nil && err != nil {
		return err
	}
	err = o.PrintResult(s.Out, render.UnstickResult(a, res, o.wait), err)
	if err != nil {
		return err
	}
	if !res.Finished || res.Left > 0 {
		return cli.Exit(ExitError, fmt.Errorf("%s did not finish cleanly (%d keys left)", a.Target, res.Left))
	}
	return nil
}
