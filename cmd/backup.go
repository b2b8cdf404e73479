package cmd

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/regghost/regghost/internal/table"
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
			b, err := backup.ReadBackup(args[0])
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

// printBackupList writes the backups, one a row. The default table leaves
// out CREATED and SCOPE, which the directory name starts with and ends with
// (-o wide has them): the path, which restore takes, is then seldom cut.
func printBackupList(out io.Writer, list []backup.BackupSummary, noHeaders bool) error {
	wide := table.Full(out)
	hdr := []string{"BACKUP", "KEYS", "SNAPSHOT REV", "STATUS"}
	if wide {
		hdr = []string{"BACKUP", "CREATED", "SCOPE", "KEYS", "SNAPSHOT REV", "STATUS"}
	}
	if noHeaders {
		hdr = nil
	}
	t := table.New(out, hdr...)
	for _, s := range list {
		created, scope, keys, rev, status := "-", "-", "-", "-", s.Status
		switch s.Status {
		case backup.BackupUnusable:
			status = "unusable: " + s.Detail
		case backup.BackupUnfinished:
			status = "UNFINISHED: " + s.Detail
		}
		if s.Status != backup.BackupUnusable {
			created, scope, keys = s.Created.Format("2006-01-02 15:04:05Z"), s.Scope, fmt.Sprint(s.Keys)
			if s.SnapshotRevision != 0 {
				rev = fmt.Sprint(s.SnapshotRevision)
			}
		}
		row := []string{s.Path, keys, rev, status}
		if wide {
			row = []string{s.Path, created, scope, keys, rev, status}
		}
		_ = t.Append(row)
	}
	return t.Render()
}

// printBackup writes what a backup holds: where it comes from, its
// snapshot, and its keys grouped by the reason they were deleted, each
// reason once, wrapped, above its keys, as scan does (-o wide: a REASON
// column instead).
func printBackup(out io.Writer, b *backup.Backup, noHeaders bool) error {
	wide := table.Full(out)
	if !noHeaders {
		table.Wrapped(out, fmt.Sprintf("Backup of %s, created %s from %s (cluster %s), scan revision %d, %d keys, checksum ok",
			table.Escape(b.Scope), b.Created.Format("2006-01-02 15:04:05Z"), table.Escape(b.Endpoint), table.OrDash(b.ClusterID), b.ScanRevision, b.Count))
		if b.Snapshot != nil {
			table.Wrapped(out, "Snapshot "+table.Escape(b.Snapshot.Path))
			fmt.Fprintf(out, "  revision %d, %d keys, sha256 %s\n", b.Snapshot.Revision, b.Snapshot.TotalKeys, b.Snapshot.SHA256)
		}
		fmt.Fprintln(out)
	}
	hdr := []string{"KEY", "MOD REV", "BYTES", "CLASSES"}
	if wide {
		hdr = append(hdr, "REASON")
	}
	if noHeaders {
		hdr = nil
	}
	t := table.New(out, hdr...)
	cells := func(e backup.Entry) []string {
		return []string{e.Key, fmt.Sprint(e.ModRevision), fmt.Sprint(len(e.Value)), table.OrDash(strings.Join(e.Classes, ","))}
	}
	if wide {
		for _, e := range b.Entries {
			_ = t.Append(append(cells(e), e.Reason))
		}
		return t.Render()
	}
	var order []string
	byReason := map[string][]backup.Entry{}
	for _, e := range b.Entries {
		if _, ok := byReason[e.Reason]; !ok {
			order = append(order, e.Reason)
		}
		byReason[e.Reason] = append(byReason[e.Reason], e)
	}
	// Keys without a reason first: no comment line above them.
	table.EmptyFirst(order)
	for _, reason := range order {
		if reason != "" {
			t.Comment(reason)
		}
		for _, e := range byReason[reason] {
			_ = t.Append(cells(e))
		}
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
