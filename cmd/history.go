package cmd

import (
	"context"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/regghost/regghost/internal/cli"
	"github.com/regghost/regghost/internal/render"
	"github.com/regghost/regghost/pkg/history"
	"github.com/regghost/regghost/pkg/session"
)

type historyOptions struct {
	namespace string
	rev       int64
	*render.PrintFlags
	sel history.Selection
	// target is an object named as kubectl names one (TYPE/NAME, TYPE
	// NAME), resolved to sel.Key in run.
	target []string
}

func newHistoryCmd(g *globalOptions) *cobra.Command {
	o := &historyOptions{PrintFlags: render.NewPrintFlags(true, "table")}
	c := &cobra.Command{
		Use:   "history (KEY | PREFIX/ | TYPE/NAME | TYPE NAME | -n NAMESPACE)",
		Short: "Show the revisions etcd still holds of a key, a namespace or a prefix",
		Args:  cobra.MaximumNArgs(2),
		RunE:  runE(g, o),
	}
	c.Flags().StringVarP(&o.namespace, "namespace", "n", "", "the history of this namespace: its key and every object in it (with TYPE/NAME: the object's namespace)")
	c.Flags().Int64Var(&o.rev, "rev", 0, "report revisions from this one on (default: the earliest held)")
	o.AddFlags(c)
	return c
}

// complete builds the selection from the argument or --namespace; an
// object named as kubectl names one is resolved to its key in run.
func (o *historyOptions) complete(g *globalOptions, _ *cobra.Command, args []string) error {
	g.Discover()
	o.sel, o.target = history.ParseArgs(g.Prefix, o.namespace, args)
	return nil
}

func (o *historyOptions) validate(*globalOptions) error {
	if o.target != nil {
		return nil
	}
	if err := o.sel.Validate(); err != nil {
		return cli.Usage("%v: history KEY, history PREFIX/ or history -n NAMESPACE", err)
	}
	if err := cli.CheckNamespace(o.namespace); err != nil {
		return err
	}
	if o.rev < 0 {
		return cli.Usage("--rev must not be negative, got %d", o.rev)
	}
	return nil
}

func (o *historyOptions) run(ctx context.Context, g *globalOptions, s genericiooptions.IOStreams) error {
	h, info, err := g.History(ctx, session.HistoryRequest{Selection: o.sel, Target: o.target, Namespace: o.namespace, From: o.rev})
	if err != nil {
		return err
	}
	return o.Print(s.Out, render.History(h, info))
}
