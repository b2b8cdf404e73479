package cmd

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/pkg/decode"
)

func newGetCmd(g *globalOptions) *cobra.Command {
	var output string
	c := &cobra.Command{
		Use:   "get KEY",
		Short: "Decode the object stored under one etcd key",
		Example: `  regghost get /registry/pods/kb-system/p1 -o yaml
  regghost get /registry/secrets/kb-system/s1 -o raw > s1.bin`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			switch output {
			case "yaml", "json", "raw":
			default:
				return usageError("--output %q is not one of yaml, json, raw", output)
			}
			return runGet(c.Context(), g, args[0], output, c.OutOrStdout())
		},
	}
	c.Flags().StringVarP(&output, "output", "o", "yaml", "output format: yaml, json, or raw (the stored bytes)")
	return c
}

func runGet(ctx context.Context, g *globalOptions, key, output string, out io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, g.etcd.CommandTimeout)
	defer cancel()
	cli, err := g.connect(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	resp, err := cli.Get(ctx, key, clientv3.WithLimit(1))
	if err != nil {
		return fmt.Errorf("read %s: %w", key, err)
	}
	if len(resp.Kvs) == 0 || string(resp.Kvs[0].Key) != key {
		return fmt.Errorf("key %s does not exist in etcd", key)
	}
	value := resp.Kvs[0].Value
	if output == "raw" {
		_, err := out.Write(value)
		return err
	}
	obj, meta, err := decode.Typed(value)
	if err != nil {
		return fmt.Errorf("decode %s (%s): %w", key, meta.Format, err)
	}
	return printStructured(out, output, obj)
}
