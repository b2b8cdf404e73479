package cmd

import (
	"context"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/regghost/regghost/internal/cli"
	"github.com/regghost/regghost/internal/render"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/session"
)

// lsOptions are ls's: -o and the prefix listed (args: PREFIX, when given).
type lsOptions struct {
	output string
	args   []string
}

func newLsCmd(g *globalOptions) *cobra.Command {
	o := &lsOptions{}
	c := &cobra.Command{
		Use:   "ls [PREFIX]",
		Short: "List keys under a prefix, from etcd or a --db file (read-only)",
		Args:  cobra.MaximumNArgs(1),
		RunE:  runE(g, o),
	}
	c.Flags().StringVarP(&o.output, "output", "o", "name", "output format: name (each key), wide (each key, its mod revision and value size); keys stream as read, so no table")
	return c
}

func (o *lsOptions) complete(_ *globalOptions, _ *cobra.Command, args []string) error {
	o.args = args
	return nil
}

func (o *lsOptions) validate(*globalOptions) error {
	if o.output != "name" && o.output != "wide" {
		return cli.Usage("-o %q: ls prints name (each key) or wide (each key, its mod revision and value size)", o.output)
	}
	return nil
}

func (o *lsOptions) run(ctx context.Context, g *globalOptions, s genericiooptions.IOStreams) error {
	g.Discover()
	prefix := g.Prefix
	if len(o.args) == 1 {
		prefix = o.args[0]
	}
	store, closeStore, err := g.OpenStore(ctx, session.Reads{PageSize: etcdscan.DefaultPageSize, Stream: true})
	if err != nil {
		return err
	}
	defer closeStore()
	lines := &render.KeyLines{Out: s.Out, Wide: o.output == "wide"}
	if err := store.Range(ctx, prefix, etcdscan.PrefixEnd(prefix), !lines.Wide, lines.Write); err != nil {
		return err
	}
	lines.Summary(s.ErrOut, prefix, store.Revision())
	return nil
}
