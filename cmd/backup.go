package cmd

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/regghost/regghost/internal/cli"
	"github.com/regghost/regghost/internal/render"
	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/snapshot"
)

func newBackupCmd() *cobra.Command {
	var dir string
	c := &cobra.Command{Use: "backup", Short: "List, show and prune the backups regghost's writes leave (purge, unstick, dangling, migrate, ...)"}
	ls := printing(&cobra.Command{Use: "ls", Short: "List the backups in the backup directory, verifying each", Args: cobra.NoArgs},
		render.NewPrintFlags(true, "table"), func([]string) (render.Output, error) {
			list, err := backup.ListBackups(dir)
			return render.BackupList(dir, list), err
		})
	cli.BackupDirVar(ls.Flags(), &dir, "backup directory")
	show := printing(&cobra.Command{Use: "show BACKUP", Short: "Show what a backup holds, verifying its checksum", Args: cobra.ExactArgs(1)},
		render.NewPrintFlags(true, "table"), func(args []string) (render.Output, error) {
			b, err := backup.ReadBackup(args[0])
			if err != nil {
				return render.Output{}, err
			}
			return render.Backup(b), nil
		})
	c.AddCommand(ls, show, newBackupPruneCmd())
	return c
}

// backupPruneOptions are backup prune's flags.
type backupPruneOptions struct {
	noCompletion
	cli.WriteFlags
	dir       string
	keep      int
	olderThan time.Duration
	*render.PrintFlags
}

func newBackupPruneCmd() *cobra.Command {
	o := &backupPruneOptions{PrintFlags: render.NewPrintFlags(true, "table")}
	c := &cobra.Command{
		Use:   "prune",
		Short: "Remove old backups, keeping each cluster's newest and every one whose undo is under way (a dry run without --confirm)",
		Args:  cobra.NoArgs,
		RunE:  runE(nil, o),
	}
	o.WriteFlags.Add(c, "really remove them (without it prune is a dry run)", "")
	cli.BackupDirVar(c.Flags(), &o.dir, "backup directory")
	c.Flags().IntVar(&o.keep, "keep", 3, "newest verified backups of each cluster to keep (at least 1)")
	c.Flags().DurationVar(&o.olderThan, "older-than", 0, "remove only backups older than this (for instance 168h); 0: any age beyond --keep")
	o.AddFlags(c)
	return c
}

func (o *backupPruneOptions) validate(*globalOptions) error {
	if o.keep < 1 {
		return cli.Usage("--keep must be at least 1 (the newest verified backup of each cluster always stays), got %d", o.keep)
	}
	if o.olderThan < 0 {
		return cli.Usage("--older-than must not be negative, got %s", o.olderThan)
	}
	return nil
}

func (o *backupPruneOptions) run(_ context.Context, _ *globalOptions, s genericiooptions.IOStreams) error {
	plan, err := backup.PlanPrune(o.dir, backup.PruneOptions{Keep: o.keep, OlderThan: o.olderThan, Now: time.Now(), VerifySnapshot: snapshot.VerifySnapshot})
	if err != nil {
		return err
	}
	n := backup.Removals(plan)
	if !o.Confirm || n == 0 {
		return o.Print(s.Out, render.BackupPrune(plan, true, 0))
	}
	if err := o.Ask(s.In, s.ErrOut, fmt.Sprintf("Remove %s from %s?", render.Plural(n, "backup"), o.dir)); err != nil {
		return err
	}
	freed, err := backup.Prune(plan)
	if perr := o.Print(s.Out, render.BackupPrune(plan, false, freed)); perr != nil && err == nil {
		err = perr
	}
	return err
}
