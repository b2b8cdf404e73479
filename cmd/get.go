package cmd

import (
	"context"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/regghost/regghost/internal/render"
)

func newGetCmd(g *globalOptions) *cobra.Command {
	o := &getOptions{PrintFlags: render.NewPrintFlags(false, "yaml", "raw")}
	c := &cobra.Command{
		Use:   "get (KEY | TYPE/NAME | TYPE NAME)",
		Short: "Decode the object stored under one etcd key",
		Args:  cobra.RangeArgs(1, 2),
		RunE:  runE(g, o),
	}
	c.Flags().StringVarP(&o.namespace, "namespace", "n", "", "the namespace of a TYPE/NAME (default: default, as kubectl's)")
	o.AddFlags(c)
	return c
}

// getOptions are get's flags and the object it names.
type getOptions struct {
	namespace string
	*render.PrintFlags
	// target is KEY, TYPE/NAME or TYPE NAME.
	target []string
}

func (o *getOptions) complete(_ *globalOptions, _ *cobra.Command, args []string) error {
	o.target = args
	return nil
}

func (o *getOptions) validate(*globalOptions) error { return nil }

func (o *getOptions) run(ctx context.Context, g *globalOptions, s genericiooptions.IOStreams) error {
	raw := o.Output() == "raw"
	st, err := g.Get(ctx, o.target, o.namespace, raw)
	if err != nil {
		return err
	}
	if raw {
		// The stored bytes, unescaped: for a file or a pipe.
		_, err := s.Out.Write(st.Value)
		return err
	}
	return o.Print(s.Out, render.Object(st.Object))
}
