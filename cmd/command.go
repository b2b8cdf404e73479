package cmd

import (
	"context"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/regghost/regghost/internal/render"
)

// options are a command's options in kubectl's shape: complete fills in
// what the flags and arguments imply, validate refuses bad input (a usage
// error, exit 2; a file that cannot be read, exit 1) before anything is
// read from the cluster or written, and run makes the one call and prints
// its result.
type options interface {
	complete(g *globalOptions, c *cobra.Command, args []string) error
	validate(g *globalOptions) error
	run(ctx context.Context, g *globalOptions, s genericiooptions.IOStreams) error
}

// runE is the RunE of a command whose options are o: complete, -o's
// check, validate, then run with the command's streams, bounded by
// --command-timeout.
func runE(g *globalOptions, o options) func(*cobra.Command, []string) error {
	return func(c *cobra.Command, args []string) error {
		if err := o.complete(g, c, args); err != nil {
			return err
		}
		if p, ok := o.(printer); ok {
			if err := p.Validate(); err != nil {
				return err
			}
		}
		if err := o.validate(g); err != nil {
			return err
		}
		ctx := c.Context()
		if _, own := o.(ownDeadline); !own && g != nil {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, g.Etcd.CommandTimeout)
			defer cancel()
		}
		return o.run(ctx, g, genericiooptions.IOStreams{In: c.InOrStdin(), Out: c.OutOrStdout(), ErrOut: c.ErrOrStderr()})
	}
}

// printer is options that print (they embed render.PrintFlags): runE
// checks -o once complete has read the arguments, before validate, so a
// mistyped format is named before any other flag's mistake.
type printer interface{ Validate() error }

// ownDeadline is options whose run bounds its own steps; runE bounds
// every other run by --command-timeout.
type ownDeadline interface{ ownDeadline() }

// unbounded makes options an ownDeadline: serve runs until stopped, space
// reclaim's timeout counts from the answer, members replace bounds each
// step and waits --wait for the learner, restore counts from its
// connection (not from reading the backup or snapshot), diff reads files
// offline.
type unbounded struct{}

func (unbounded) ownDeadline() {}

// noCompletion is the complete of options whose flags need nothing filled
// in.
type noCompletion struct{}

func (noCompletion) complete(*globalOptions, *cobra.Command, []string) error { return nil }

// printing makes c a command that reads one thing and prints it: -o
// checked first, then out's Output printed the way -o asks.
func printing(c *cobra.Command, p *render.PrintFlags, out func(args []string) (render.Output, error)) *cobra.Command {
	c.RunE = func(c *cobra.Command, args []string) error {
		if err := p.Validate(); err != nil {
			return err
		}
		o, err := out(args)
		if err != nil {
			return err
		}
		return p.Print(c.OutOrStdout(), o)
	}
	p.AddFlags(c)
	return c
}
