package migrate

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/regghost/regghost/pkg/backup"
)

// Held is one of regghost's backups on this node that still holds values
// of the resource under a provider and key other than the one that writes:
// a restore of it needs that key.
type Held struct {
	Path string `json:"path"`
	// ByKey counts its values per provider and key.
	ByKey map[string]int `json:"byKey"`
	// SnapshotRevision is the revision of the etcd snapshot taken with it
	// (0: none): a snapshot taken before the migration holds every value
	// as it was then.
	SnapshotRevision int64 `json:"snapshotRevision,omitempty"`
}

// InBackups reads every backup under root and names those holding values
// of c's resource not under c.Writer, and, when rotated (another key held
// values of it), those whose snapshot was taken before c's revision. A root
// that does not exist holds nothing; a backup that does not read is
// skipped (backup ls says why).
func InBackups(root string, c *Census, rotated bool) ([]Held, error) {
	if root == "" || c.Writer == "" {
		return nil, nil
	}
	dirs, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read backups in %s: %w", root, err)
	}
	var out []Held
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		path := filepath.Join(root, d.Name())
		b, err := backup.ReadBackup(path)
		if err != nil {
			continue
		}
		h := Held{Path: path, ByKey: map[string]int{}}
		prefix := b.Prefix
		if prefix == "" {
			prefix = "/registry/"
		}
		for _, e := range b.Entries {
			if !strings.HasPrefix(e.Key, prefix+c.Target.Prefix+"/") {
				continue
			}
			if with := c.nameOf(e.Value); with != c.Writer {
				h.ByKey[with]++
			}
		}
		if rotated && b.Snapshot != nil && b.Snapshot.Revision < c.Revision {
			h.SnapshotRevision = b.Snapshot.Revision
		}
		if len(h.ByKey) > 0 || h.SnapshotRevision > 0 {
			out = append(out, h)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}
