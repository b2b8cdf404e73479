package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/regghost/regghost/internal/render"
	"github.com/regghost/regghost/pkg/decrypt"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/resolve"
	"github.com/regghost/regghost/pkg/session"
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
	store, closeStore, err := g.OpenStore(ctx, session.Reads{PageSize: 1, Stream: true})
	if err != nil {
		return err
	}
	defer closeStore()
	key, err := resolve.Target(ctx, store, g.Prefix, o.target, o.namespace)
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
	if o.Output() == "raw" {
		// The stored bytes, unescaped: for a file or a pipe.
		_, err := s.Out.Write(kv.Value)
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
	return o.Print(s.Out, render.Object(obj))
}
