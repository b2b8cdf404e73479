package cmd

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/regghost/regghost/pkg/repair"
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
			list, err := repair.ListBackups(dir)
			if err != nil {
				return err
			}
			rows := make([]row, len(list))
			for i := range list {
				rows[i] = row{name: list[i].Path, obj: &list[i]}
			}
			return lsPrint.print(c.OutOrStdout(), output{doc: map[string]any{"backups": list}, rows: rows,
				human: func(w io.Writer, _, noHeaders bool) error { return printBackupList(w, list, noHeaders) }})
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
			b, err := repair.ReadBackup(args[0])
			if err != nil {
				return err
			}
			rows := make([]row, len(b.Entries))
			for i := range b.Entries {
				rows[i] = row{name: b.Entries[i].Key, obj: &b.Entries[i]}
			}
			return showPrint.print(c.OutOrStdout(), output{doc: b, rows: rows,
				human: func(w io.Writer, _, noHeaders bool) error { return printBackup(w, b, noHeaders) }})
		},
	}
	showPrint.addFlags(show)
	c.AddCommand(ls, show)
	return c
}

func printBackupList(out io.Writer, list []repair.BackupSummary, noHeaders bool) error {
	hdr := []string{"BACKUP", "CREATED", "SCOPE", "KEYS", "SNAPSHOT REV", "STATUS"}
	if noHeaders {
		hdr = nil
	}
	t := newTable(out, hdr...)
	for _, s := range list {
		if s.Status == repair.BackupUnusable {
			_ = t.Append([]string{s.Path, "-", "-", "-", "-", "unusable: " + s.Detail})
			continue
		}
		rev := "-"
		if s.SnapshotRevision != 0 {
			rev = fmt.Sprint(s.SnapshotRevision)
		}
		status := s.Status
		if s.Status == repair.BackupUnfinished {
			status = "UNFINISHED: " + s.Detail
		}
		_ = t.Append([]string{s.Path, s.Created.Format("2006-01-02 15:04:05Z"), s.Scope, fmt.Sprint(s.Keys), rev, status})
	}
	return t.Render()
}

func printBackup(out io.Writer, b *repair.Backup, noHeaders bool) error {
	if !noHeaders {
		fmt.Fprintf(out, "Backup of %s, created %s from %s (cluster %s), scan revision %d, %d keys, checksum ok\n",
			escapeCell(b.Scope), b.Created.Format("2006-01-02 15:04:05Z"), escapeCell(b.Endpoint), orDash(b.ClusterID), b.ScanRevision, b.Count)
		if b.Snapshot != nil {
			fmt.Fprintf(out, "Snapshot %s: sha256 %s, revision %d, %d keys\n\n", escapeCell(b.Snapshot.Path), b.Snapshot.SHA256, b.Snapshot.Revision, b.Snapshot.TotalKeys)
		}
	}
	hdr := []string{"KEY", "MOD REV", "BYTES", "CLASSES", "REASON"}
	if noHeaders {
		hdr = nil
	}
	t := newTable(out, hdr...)
	for _, e := range b.Entries {
		_ = t.Append([]string{e.Key, fmt.Sprint(e.ModRevision), fmt.Sprint(len(e.Value)), strings.Join(e.Classes, ","), e.Reason})
	}
	return t.Render()
}

// backupDirOf returns the directory of a backup given as a directory or file.
func backupDirOf(path string) string {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return path
	}
	return filepath.Dir(path)
}
