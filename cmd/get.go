package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/regghost/regghost/internal/cli"
	"github.com/regghost/regghost/internal/render"
	"github.com/regghost/regghost/pkg/decrypt"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/resolve"
	"github.com/regghost/regghost/pkg/session"
)

func newGetCmd(g *globalOptions) *cobra.Command {
	p := render.NewPrintFlags(false, "yaml", "raw")
	var namespace string
	c := &cobra.Command{
		Use:   "get (KEY | TYPE/NAME | TYPE NAME)",
		Short: "Decode the object stored under one etcd key",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(c *cobra.Command, args []string) error {
			if err := p.Validate(); err != nil {
				return err
			}
			return runGet(c.Context(), g, args, namespace, p, c.OutOrStdout())
		},
	}
	c.Flags().StringVarP(&namespace, "namespace", "n", "", "the namespace of a TYPE/NAME (default: default, as kubectl's)")
	p.AddFlags(c)
	return c
}

func runGet(ctx context.Context, g *globalOptions, args []string, namespace string, p *render.PrintFlags, out io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, g.Etcd.CommandTimeout)
	defer cancel()
	store, closeStore, err := g.OpenStore(ctx, session.Reads{PageSize: 1, Stream: true})
	if err != nil {
		return err
	}
	defer closeStore()
	key, err := resolve.Target(ctx, store, g.Prefix, args, namespace)
	if errors.Is(err, resolve.ErrTarget) {
		return cli.Usage("%v", err)
	}
	if err != nil {
		return err
	}
	kv, err := etcdscan.GetCopy(ctx, store, key)
	if err != nil {
		return fmt.Errorf("read %s: %w", key, err)
	}
	if kv == nil {
		return fmt.Errorf("key %s does not exist in etcd", key)
	}
	if p.Output() == "raw" {
		// The stored bytes, unescaped: for a file or a pipe.
		_, err := out.Write(kv.Value)
		return err
	}
	dec, err := g.Decrypter(ctx)
	if err != nil {
		return err
	}
	obj, meta, err := decrypt.DecodeStored(ctx, dec, g.Prefix, key, kv.Value)
	if err != nil {
		if meta != nil && meta.Format != "" {
			return fmt.Errorf("decode %s (%s): %w", key, meta.Format, err)
		}
		return fmt.Errorf("decode %s: %w", key, err)
	}
	return p.Print(out, render.Object(obj))
}
