package cmd

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

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
			info, ep, err := g.SaveSnapshot(c.Context(), args[0])
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
	return printing(&cobra.Command{Use: "status FILE", Short: "Verify a snapshot file: its sha256 and bbolt consistency", Args: cobra.ExactArgs(1)},
		render.NewPrintFlags(true, "table"), func(args []string) (render.Output, error) {
			info, err := snapshot.VerifySnapshot(args[0])
			if err != nil {
				return render.Output{}, err
			}
			return render.SnapshotOutput("Snapshot ", info), nil
		})
}

// snapshotRestoreOptions are snapshot restore's: restore's, and which
// keys of the logical snapshot it writes back.
type snapshotRestoreOptions struct {
	restoreOptions
	prefix    string
	allAbsent bool
}

func newSnapshotRestoreCmd(g *globalOptions) *cobra.Command {
	o := &snapshotRestoreOptions{restoreOptions: restoreOptions{PrintFlags: render.NewPrintFlags(true, "table"), summary: true}}
	c := &cobra.Command{
		Use:   "restore FILE",
		Short: "Write back from a logical snapshot the keys a purge deleted (dry run without --confirm)",
		Args:  cobra.ExactArgs(1),
		RunE:  runE(g, o),
	}
	c.Flags().StringVar(&o.prefix, "key-prefix", "", "restore only the keys under this key prefix (default: every key the purge deleted; with --all-absent every key of the snapshot)")
	c.Flags().BoolVar(&o.allAbsent, strings.TrimPrefix(snapshot.AllAbsentFlag, "--"), false,
		"write back every key of the snapshot absent now, not only the keys its purge deleted: this brings back what Kubernetes deleted since the snapshot too; for rebuilding a datastore that lost its keys")
	o.addFlags(c, "snapshot")
	return c
}

func (o *snapshotRestoreOptions) validate(g *globalOptions) error {
	path := o.path
	if err := refuseDB(g, "snapshot restore"); err != nil {
		return err
	}
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	if backup.SourceOf(path) == backup.SourceBackup && !snapshot.IsLogical(path) {
		return cli.Usage("%s is a regghost backup directory, not a logical snapshot: `regghost restore %s` puts back what it holds", path, path)
	}
	if !snapshot.IsLogical(path) {
		return cli.Usage("%s is not a logical snapshot; restore etcd's own snapshot with: etcdutl snapshot restore %s --data-dir … (see regghost purge's disaster path), or bring chosen objects back from it with: regghost recover --snapshot %s", path, path, path)
	}
	return nil
}

func (o *snapshotRestoreOptions) run(ctx context.Context, g *globalOptions, s genericiooptions.IOStreams) error {
	b, release, err := snapshot.RestoreSource(o.path, o.prefix, o.allAbsent)
	if err != nil {
		return err
	}
	defer release()
	return o.restoreBackup(ctx, g, b, o.path, "", s)
}
