package cmd

import (
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/regghost/regghost/internal/render"
	"github.com/regghost/regghost/pkg/backup"
)

func newBackupCmd() *cobra.Command {
	var dir string
	c := &cobra.Command{Use: "backup", Short: "List and show purge backups"}
	lsPrint := newPrintFlags(true, "table")
	ls := &cobra.Command{
		Use:   "ls",
		Short: "List the backups in the backup directory, verifying each",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := lsPrint.validate(); err != nil {
				return err
			}
			list, err := backup.ListBackups(dir)
			if err != nil {
				return err
			}
			return lsPrint.print(c.OutOrStdout(), render.BackupList(list))
		},
	}
	ls.Flags().StringVar(&dir, "backup-dir", envOr("REGGHOST_BACKUP_DIR", defaultBackupRoot), "backup directory (env REGGHOST_BACKUP_DIR)")
	lsPrint.addFlags(ls)
	showPrint := newPrintFlags(true, "table")
	show := &cobra.Command{
		Use:   "show BACKUP",
		Short: "Show what a backup holds, verifying its checksum",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := showPrint.validate(); err != nil {
				return err
			}
			b, err := backup.ReadBackup(args[0])
			if err != nil {
				return err
			}
			return showPrint.print(c.OutOrStdout(), render.Backup(b))
		},
	}
	showPrint.addFlags(show)
	c.AddCommand(ls, show)
	return c
}

// backupDirOf returns the directory of a backup given as a directory or file.
func backupDirOf(path string) string {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return path
	}
	return filepath.Dir(path)
}
