package cmd

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/regghost/regghost/internal/cli"
	"github.com/regghost/regghost/internal/render"
	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/snapshot"
)

func newSnapshotCmd(g *globalOptions) *cobra.Command {
	c := &cobra.Command{Use: "snapshot", Short: "Save, check or restore a snapshot"}
	c.AddCommand(&cobra.Command{
		Use:   "save FILE",
		Short: "Save a verified snapshot of etcd (or a logical one of kine) to FILE",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			ctx, etcd, done, err := g.Bounded(c.Context())
			if err != nil {
				return err
			}
			defer done()
			cfg, err := g.Etcd.ClientConfig()
			if err != nil {
				return err
			}
			cfg.Endpoints = etcd.Endpoints()
			info, ep, err := snapshot.TakeSnapshot(ctx, etcd, cfg, args[0], 0)
			if err != nil {
				return err
			}
			render.Snapshot(c.OutOrStdout(), "Snapshot from "+ep+" saved at ", info)
			return nil
		},
	}, newSnapshotStatusCmd(), newSnapshotRestoreCmd(g))
	return c
}

// newSnapshotStatusCmd verifies a snapshot file and says what it holds.
func newSnapshotStatusCmd() *cobra.Command {
	status := render.NewPrintFlags(true, "table")
	c := &cobra.Command{
		Use:   "status FILE",
		Short: "Verify a snapshot file: its sha256 and bbolt consistency",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := status.Validate(); err != nil {
				return err
			}
			info, err := snapshot.VerifySnapshot(args[0])
			if err != nil {
				return err
			}
			return status.Print(c.OutOrStdout(), render.SnapshotOutput("Snapshot ", info))
		},
	}
	status.AddFlags(c)
	return c
}

func newSnapshotRestoreCmd(g *globalOptions) *cobra.Command {
	var confirm, yes, allAbsent, intoRecreated bool
	var prefix string
	var other otherClusterFlags
	p := render.NewPrintFlags(true, "table")
	c := &cobra.Command{
		Use:   "restore FILE",
		Short: "Write back from a logical snapshot the keys a purge deleted (dry run without --confirm)",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := p.Validate(); err != nil {
				return err
			}
			if err := refuseDB(g, "snapshot restore"); err != nil {
				return err
			}
			if _, err := os.Stat(args[0]); err != nil {
				return fmt.Errorf("snapshot: %w", err)
			}
			if backup.SourceOf(args[0]) == backup.SourceBackup && !snapshot.IsLogical(args[0]) {
				return cli.Usage("%s is a regghost backup directory, not a logical snapshot: `regghost restore %s` puts back what it holds", args[0], args[0])
			}
			if !snapshot.IsLogical(args[0]) {
				return cli.Usage("%s is not a logical snapshot; restore etcd's own snapshot with: etcdutl snapshot restore %s --data-dir … (see regghost purge's disaster path), or bring chosen objects back from it with: regghost recover --snapshot %s", args[0], args[0], args[0])
			}
			// Inside a backup directory, it journals there: a prune must
			// not remove it meanwhile.
			if _, err := os.Stat(filepath.Join(backupDirOf(args[0]), backup.BackupFile)); err == nil {
				release, err := backup.Hold(backupDirOf(args[0]))
				if err != nil {
					return fmt.Errorf("%w; nothing was restored", err)
				}
				defer release()
			}
			b, err := snapshot.BackupFromLogicalPurge(args[0], prefix, allAbsent)
			if errors.Is(err, snapshot.ErrNoPurgeBackup) {
				return fmt.Errorf("%w; by default snapshot restore writes back only the keys its purge deleted, as that backup names them; %s writes back every key of the snapshot absent now; nothing was restored", err, snapshot.AllAbsentFlag)
			}
			if err != nil {
				return fmt.Errorf("%w; nothing was restored", err)
			}
			if len(b.Entries) == 0 {
				what := "no key"
				if !allAbsent {
					what = "no key of its purge"
				}
				return fmt.Errorf("%s holds %s under %q; nothing was restored", args[0], what, prefix)
			}
			return restoreBackup(c.Context(), g, b, args[0], "", restoreFlags{confirm: confirm, yes: yes, otherCluster: other.cluster, otherClusterGrants: other.grants, intoRecreated: intoRecreated, print: p, summary: true}, c.InOrStdin(), c.OutOrStdout())
		},
	}
	c.Flags().BoolVar(&confirm, "confirm", false, "really write the keys back")
	c.Flags().BoolVar(&yes, "yes", false, cli.YesHelp)
	c.Flags().StringVar(&prefix, "key-prefix", "", "restore only the keys under this key prefix (default: every key the purge deleted; with --all-absent every key of the snapshot)")
	c.Flags().BoolVar(&allAbsent, strings.TrimPrefix(snapshot.AllAbsentFlag, "--"), false,
		"write back every key of the snapshot absent now, not only the keys its purge deleted: this brings back what Kubernetes deleted since the snapshot too; for rebuilding a datastore that lost its keys")
	addIntoRecreatedFlag(c, &intoRecreated)
	other.add(c, "snapshot")
	p.AddFlags(c)
	return c
}
