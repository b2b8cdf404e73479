package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/plural"
	"github.com/regghost/regghost/pkg/table"
)

// BackupList is the backups of a directory in every form -o can ask for;
// its rows are the backups.
func BackupList(root string, list []backup.BackupSummary) Output {
	return Output{Doc: map[string]any{"backups": list}, Rows: RowsOf(list, func(s *backup.BackupSummary) string { return s.Path }),
		Human: func(w io.Writer, _, noHeaders bool) error {
			if len(list) == 0 {
				_, err := fmt.Fprintf(w, "No backup in %s: regghost has written none here.\n", root)
				return err
			}
			return writeBackupList(w, list, noHeaders)
		}}
}

// Backup is what a backup holds in every form -o can ask for; its rows are
// its keys.
func Backup(b *backup.Backup) Output {
	return Output{Doc: b, Rows: RowsOf(b.Entries, func(e *backup.Entry) string { return e.Key }),
		Human: func(w io.Writer, _, noHeaders bool) error { return writeBackup(w, b, noHeaders) }}
}

// writeBackupList writes the backups, one a row. The default table leaves
// out CREATED and SCOPE, which the directory name starts with and ends with
// (-o wide has them): the path, which restore takes, is then seldom cut.
func writeBackupList(out io.Writer, list []backup.BackupSummary, noHeaders bool) error {
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

// writeBackup writes what a backup holds: where it comes from, its
// snapshot, and its keys grouped by the reason they were deleted, each
// reason once, wrapped, above its keys, as scan does (-o wide: a REASON
// column instead).
func writeBackup(out io.Writer, b *backup.Backup, noHeaders bool) error {
	wide := table.Full(out)
	if !noHeaders {
		table.Wrapped(out, fmt.Sprintf("Backup of %s, created %s from %s (cluster %s), scan revision %d, %s, checksum ok",
			table.Escape(b.Scope), b.Created.Format("2006-01-02 15:04:05Z"), table.Escape(b.Endpoint), table.OrDash(b.ClusterID), b.ScanRevision, plural.Of(b.Count, "key")))
		if b.Snapshot != nil {
			table.Wrapped(out, "Snapshot "+table.Escape(b.Snapshot.Path))
			fmt.Fprintf(out, "  revision %d, %s, sha256 %s\n", b.Snapshot.Revision, plural.Of(int(b.Snapshot.TotalKeys), "key"), b.Snapshot.SHA256)
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

// BackupPrune is a prune's plan (or what it did) in every form -o can ask
// for; its rows are the backups it removes.
func BackupPrune(plan []backup.PruneDecision, dryRun bool, freed int64) Output {
	var removed []backup.PruneDecision
	var bytes int64
	for _, d := range plan {
		if d.Remove {
			removed = append(removed, d)
			bytes += d.Bytes
		}
	}
	doc := map[string]any{"backups": plan, "dryRun": dryRun, "removeBytes": bytes, "freedBytes": freed}
	return Output{Doc: doc, Rows: RowsOf(removed, func(d *backup.PruneDecision) string { return d.Path }),
		Human: func(w io.Writer, _, noHeaders bool) error {
			return writeBackupPrune(w, plan, dryRun, bytes, freed, noHeaders)
		}}
}

func writeBackupPrune(out io.Writer, plan []backup.PruneDecision, dryRun bool, bytes, freed int64, noHeaders bool) error {
	hdr := []string{"BACKUP", "SIZE", "PRUNE", "WHY"}
	if noHeaders {
		hdr = nil
	}
	t := table.New(out, hdr...)
	n := 0
	for _, d := range plan {
		verb := "keep"
		if d.Remove {
			verb, n = "REMOVE", n+1
		}
		why, _ := strings.CutPrefix(strings.TrimPrefix(d.Why, "removed: "), "kept: ")
		if err := t.Append([]string{d.Path, fmt.Sprintf("%.1f MiB", float64(d.Bytes)/(1<<20)), verb, why}); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	switch {
	case n == 0:
		fmt.Fprintln(out, "\nNothing to prune.")
	case dryRun:
		fmt.Fprintf(out, "\nDry run: %s would be removed, freeing %.1f MiB. Nothing was removed; --confirm removes %s.\n", plural.Of(n, "backup"), float64(bytes)/(1<<20), plural.Them(n))
	default:
		fmt.Fprintf(out, "\nRemoved %s, freeing %.1f MiB.\n", plural.Of(n, "backup"), float64(freed)/(1<<20))
	}
	return nil
}
