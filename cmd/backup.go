package cmd

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/spf13/cobra"

	"github.com/regghost/regghost/pkg/repair"
)

func newBackupCmd() *cobra.Command {
	var dir, output string
	c := &cobra.Command{Use: "backup", Short: "List and show purge backups"}
	ls := &cobra.Command{
		Use:   "ls",
		Short: "List the backups in the backup directory, verifying each",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			entries, err := os.ReadDir(dir)
			if err != nil {
				return fmt.Errorf("list backups: %w", err)
			}
			t := newTable(c.OutOrStdout(), "BACKUP", "CREATED", "SCOPE", "KEYS", "SNAPSHOT REV", "STATUS")
			var names []string
			for _, e := range entries {
				if e.IsDir() {
					names = append(names, e.Name())
				}
			}
			sort.Strings(names)
			for _, n := range names {
				p := filepath.Join(dir, n)
				b, err := repair.ReadBackup(p)
				if err != nil {
					_ = t.Append([]string{p, "-", "-", "-", "-", "unusable: " + oneLine(err)})
					continue
				}
				rev := "-"
				if b.Snapshot != nil {
					rev = fmt.Sprint(b.Snapshot.Revision)
				}
				status := "ok"
				if n, err := repair.Unfinished(p, b); err != nil {
					status = "audit log unreadable: " + oneLine(err)
				} else if n > 0 {
					status = fmt.Sprintf("UNFINISHED: %d keys have no outcome in audit.log (regghost scan shows where they stand)", n)
				}
				_ = t.Append([]string{p, b.Created.Format("2006-01-02 15:04:05Z"), b.Scope, fmt.Sprint(b.Count), rev, status})
			}
			return t.Render()
		},
	}
	ls.Flags().StringVar(&dir, "backup-dir", envOr("REGGHOST_BACKUP_DIR", defaultBackupRoot), "backup directory (env REGGHOST_BACKUP_DIR)")
	show := &cobra.Command{
		Use:   "show BACKUP",
		Short: "Show what a backup holds, verifying its checksum",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			b, err := repair.ReadBackup(args[0])
			if err != nil {
				return err
			}
			out := c.OutOrStdout()
			if output == "json" {
				return printStructured(out, "json", b)
			}
			fmt.Fprintf(out, "Backup of %s, created %s from %s (cluster %s), scan revision %d, %d keys, checksum ok\n",
				b.Scope, b.Created.Format("2006-01-02 15:04:05Z"), b.Endpoint, b.ClusterID, b.ScanRevision, b.Count)
			if b.Snapshot != nil {
				fmt.Fprintf(out, "Snapshot %s: sha256 %s, revision %d, %d keys\n\n", b.Snapshot.Path, b.Snapshot.SHA256, b.Snapshot.Revision, b.Snapshot.TotalKeys)
			}
			t := newTable(out, "KEY", "MOD REV", "BYTES", "CLASSES", "REASON")
			for _, e := range b.Entries {
				_ = t.Append([]string{e.Key, fmt.Sprint(e.ModRevision), fmt.Sprint(len(e.Value)), fmt.Sprint(e.Classes), e.Reason})
			}
			return t.Render()
		},
	}
	show.Flags().StringVarP(&output, "output", "o", "table", "output format: table or json")
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
