package cmd

import (
	"context"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/regghost/regghost/internal/render"
	"github.com/regghost/regghost/pkg/dbfile"
)

// diffOptions are diff's: the two db files and whether values are shown.
type diffOptions struct {
	unbounded
	*render.PrintFlags
	values bool
	a, b   string
}

func newDiffCmd(g *globalOptions) *cobra.Command {
	o := &diffOptions{PrintFlags: render.NewPrintFlags(true, "table")}
	c := &cobra.Command{
		Use:   "diff A.db B.db",
		Short: "Show keys that appeared, vanished or changed between two etcd db files",
		Args:  cobra.ExactArgs(2),
		RunE:  runE(g, o),
	}
	o.AddFlags(c)
	c.Flags().BoolVar(&o.values, "values", false, "include both sides' stored bytes in -o json/yaml (default: their sha256)")
	return c
}

func (o *diffOptions) complete(_ *globalOptions, _ *cobra.Command, args []string) error {
	o.a, o.b = args[0], args[1]
	return nil
}

func (o *diffOptions) validate(*globalOptions) error { return nil }

func (o *diffOptions) run(ctx context.Context, g *globalOptions, s genericiooptions.IOStreams) error {
	a, err := g.OpenDB(o.a)
	if err != nil {
		return err
	}
	defer a.Close()
	b, err := g.OpenDB(o.b)
	if err != nil {
		return err
	}
	defer b.Close()
	var changes []dbfile.Change
	err = dbfile.Diff(ctx, a, b, dbfile.DiffOptions{Prefix: g.Prefix, Values: o.values}, func(ch dbfile.Change) error {
		changes = append(changes, ch)
		return nil
	})
	if err != nil {
		return err
	}
	return o.Print(s.Out, render.Diff(o.a, o.b, a, b, changes, g.Prefix))
}
