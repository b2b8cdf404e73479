package cmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/regghost/regghost/pkg/repair"
)

func newSnapshotCmd(g *globalOptions) *cobra.Command {
	c := &cobra.Command{Use: "snapshot", Short: "Save or check an etcd snapshot"}
	c.AddCommand(&cobra.Command{
		Use:   "save FILE",
		Short: "Stream a snapshot from the first endpoint that answers to FILE and verify it (like etcdctl snapshot save)",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			ctx, cli, done, err := g.session(c.Context())
			if err != nil {
				return err
			}
			defer done()
			cfg, err := g.etcd.ClientConfig()
			if err != nil {
				return err
			}
			ep, err := repair.SnapshotEndpoint(ctx, cli, cfg.Endpoints, 0)
			if err != nil {
				return err
			}
			cfg.Endpoints = []string{ep}
			info, err := repair.SaveSnapshot(ctx, cfg, args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(c.OutOrStdout(), "Snapshot from %s saved at %s\n", ep, describeSnapshot(info))
			return nil
		},
	}, &cobra.Command{
		Use:   "status FILE",
		Short: "Verify a snapshot file: trailing sha256 and bbolt consistency",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			info, err := repair.VerifySnapshot(args[0])
			if err != nil {
				return err
			}
			fmt.Fprintln(c.OutOrStdout(), describeSnapshot(info))
			return nil
		},
	})
	return c
}

// describeSnapshot is the one-line summary of a verified snapshot.
func describeSnapshot(info *repair.SnapshotInfo) string {
	return fmt.Sprintf("%s: %d bytes, sha256 %s, revision %d, %d keys, hash %d (verified)",
		info.Path, info.Size, info.SHA256, info.Revision, info.TotalKeys, info.Hash)
}
