package cmd

import (
	"context"
	"errors"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/regghost/regghost/internal/cli"
	"github.com/regghost/regghost/internal/render"
	"github.com/regghost/regghost/pkg/history"
	"github.com/regghost/regghost/pkg/resolve"
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

// complete builds the selection from the argument or --namespace.
func (o *historyOptions) complete(g *globalOptions, _ *cobra.Command, args []string) error {
	g.Discover()
	o.sel = history.Selection{Registry: g.Prefix, Namespace: o.namespace}
	if isObjectTarget(args) {
		// kubectl's TYPE/NAME or TYPE NAME: resolved to its key once etcd
		// (or the db file) can be read; -n is the object's namespace.
		o.target, o.sel.Namespace = args, ""
		return nil
	}
	if len(args) == 2 {
		return cli.Usage("%s: give an etcd key (/registry/...), TYPE/NAME or TYPE NAME", strings.Join(args, " "))
	}
	if len(args) == 1 {
		arg := args[0]
		if !strings.HasPrefix(arg, "/") {
			arg = g.Prefix + arg
		}
		if strings.HasSuffix(arg, "/") {
			o.sel.Prefix = arg
		} else {
			o.sel.Key = arg
		}
	}
	return nil
}

// isObjectTarget says whether args name an object as kubectl does (TYPE
// NAME, or TYPE/NAME: one slash, not a key), rather than a key or a prefix.
func isObjectTarget(args []string) bool {
	switch len(args) {
	case 2:
		return true
	case 1:
		a := args[0]
		return !strings.HasPrefix(a, "/") && strings.Count(a, "/") == 1 && !strings.HasSuffix(a, "/")
	}
	return false
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
	var notHeld *session.NotHeldError
	switch {
	case errors.Is(err, resolve.ErrTarget):
		return cli.Usage("%v", err)
	case errors.As(err, &notHeld):
		return cli.Failed(err)
	case err != nil:
		return err
	}
	return o.Print(s.Out, render.History(h, info))
}
