package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/regghost/regghost/internal/cli"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/plural"
	"github.com/regghost/regghost/pkg/session"
)

func newLsCmd(g *globalOptions) *cobra.Command {
	var output string
	c := &cobra.Command{
		Use:   "ls [PREFIX]",
		Short: "List keys under a prefix, from etcd or a --db file (read-only)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if output != "name" && output != "wide" {
				return cli.Usage("-o %q: ls prints name (each key) or wide (each key, its mod revision and value size)", output)
			}
			long := output == "wide"
			g.Discover()
			prefix := g.Prefix
			if len(args) == 1 {
				prefix = args[0]
			}
			ctx, cancel := context.WithTimeout(c.Context(), g.Etcd.CommandTimeout)
			defer cancel()
			store, closeStore, err := g.OpenStore(ctx, session.Reads{PageSize: etcdscan.DefaultPageSize, Stream: true})
			if err != nil {
				return err
			}
			defer closeStore()
			out := c.OutOrStdout()
			n := 0
			err = store.Range(ctx, prefix, etcdscan.PrefixEnd(prefix), !long, func(kv *mvccpb.KeyValue) error {
				n++
				if long {
					_, err := fmt.Fprintf(out, "%s\t%d\t%d\n", kv.Key, kv.ModRevision, len(kv.Value))
					return err
				}
				_, err := fmt.Fprintf(out, "%s\n", kv.Key)
				return err
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(c.ErrOrStderr(), "%s under %s at revision %d\n", plural.Of(n, "key"), prefix, store.Revision())
			return nil
		},
	}
	c.Flags().StringVarP(&output, "output", "o", "name", "output format: name (each key), wide (each key, its mod revision and value size); keys stream as read, so no table")
	return c
}
