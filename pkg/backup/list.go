package backup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// BackupSummary is one backup directory as `backup ls` shows it.
type BackupSummary struct {
	Path    string    `json:"path"`
	Created time.Time `json:"created,omitempty"`
	Scope   string    `json:"scope,omitempty"`
	Keys    int       `json:"keys"`
	// SnapshotRevision is the revision of the backup's snapshot (0: none).
	SnapshotRevision int64 `json:"snapshotRevision,omitempty"`
	// Status is "ok", "unfinished" (keys without an outcome in the audit
	// log: the purge was killed; or the evidence of a members replacement
	// still under way) or "unusable" (the backup fails its check).
	Status string `json:"status"`
	// Detail says why a backup is unfinished or unusable.
	Detail string `json:"detail,omitempty"`
	// Unfinished counts the keys with no outcome in the audit log.
	Unfinished int `json:"unfinished,omitempty"`
}

// Backup statuses.
const (
	BackupOK         = "ok"
	BackupUnfinished = "unfinished"
	BackupUnusable   = "unusable"
)

// ListBackups reads every backup directory under root, in name (creation)
// order, verifying each backup and reading its audit log.
func ListBackups(root string) ([]BackupSummary, error) {
	entries, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		// A node where regghost never wrote holds no backup: nothing to list.
		return []BackupSummary{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list backups: %w", err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	out := make([]BackupSummary, 0, len(names))
	for _, n := range names {
		p := filepath.Join(root, n)
		b, err := ReadBackup(p)
		if err != nil {
			out = append(out, BackupSummary{Path: p, Status: BackupUnusable, Detail: firstLine(err.Error())})
			continue
		}
		s := BackupSummary{Path: p, Created: b.Created, Scope: b.Scope, Keys: b.Count, Status: BackupOK}
		if b.Snapshot != nil {
			s.SnapshotRevision = b.Snapshot.Revision
		}
		if n, err := Unfinished(p, b); err != nil {
			s.Status, s.Detail = BackupUnfinished, "audit log unreadable: "+firstLine(err.Error())
		} else if n > 0 {
			s.Status, s.Unfinished = BackupUnfinished, n
			s.Detail = fmt.Sprintf("%d keys have no outcome in audit.log (regghost scan shows where they stand)", n)
		}
		if why := replacementUnderWay(p); why != "" {
			s.Status, s.Detail = BackupUnfinished, why
		}
		out = append(out, s)
	}
	return out, nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// Dirs lists the directories under root (the backups a shell completes);
// nothing when root cannot be read.
func Dirs(root string) []string {
	dirs, err := os.ReadDir(root)
	if err != nil {
		return nil
	}
	var out []string
	for _, d := range dirs {
		if d.IsDir() {
			out = append(out, filepath.Join(root, d.Name()))
		}
	}
	return out
}
