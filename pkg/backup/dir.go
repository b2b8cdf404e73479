package backup

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/regghost/regghost/pkg/notice"
)

var unsafeChars = regexp.MustCompile(`[^a-z0-9.-]+`)

// NewBackupDir creates a new, empty backup directory for one purge.
func NewBackupDir(root, scope string, now time.Time) (string, error) {
	if root == "" {
		return "", errors.New("no backup directory: pass --backup-dir")
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return "", fmt.Errorf("create backup directory %s: %w", root, err)
	}
	slug := slugOf(scope)
	base := filepath.Join(root, now.UTC().Format("20060102T150405Z")+"-"+slug)
	dir := base
	// Two runs of the same scope in one second get directories of their own.
	for n := 2; ; n++ {
		err := os.Mkdir(dir, 0o700)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) || n > 100 {
			return "", fmt.Errorf("create backup directory %s: %w", dir, err)
		}
		dir = fmt.Sprintf("%s-%d", base, n)
	}
	probe := filepath.Join(dir, ".probe")
	if err := writeFileSync(probe, []byte("ok")); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("backup directory %s is not writable: %w", dir, err)
	}
	os.Remove(probe)
	return dir, nil
}

// slugOf is the part of a backup directory's name its scope gives.
func slugOf(scope string) string {
	slug := strings.Trim(unsafeChars.ReplaceAllString(strings.ToLower(scope), "-"), "-")
	if len(slug) > 60 {
		slug = slug[:60]
	}
	return slug
}

// NamedAfter lists the backup directories under root whose backup was
// made for scope ("namespace shop"), oldest first: evidence that what scope
// names existed and was written away by regghost. A directory is taken by
// its name (a purge of "shop-2" makes one that starts alike), then by the
// scope its backup.json records. None when root does not exist.
func NamedAfter(root, scope string) []string {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil
	}
	slug := slugOf(scope)
	var out []string
	for _, e := range entries {
		name := e.Name()
		stamp, rest, ok := strings.Cut(name, "-")
		if !e.IsDir() || !ok || len(stamp) != len("20060102T150405Z") || (rest != slug && !strings.HasPrefix(rest, slug+"-")) {
			continue
		}
		dir := filepath.Join(root, name)
		if scopeOf(dir) == scope {
			out = append(out, dir)
		}
	}
	return out
}

// scopeOf is the scope a backup directory's backup.json records ("" when
// it cannot be read).
func scopeOf(dir string) string {
	f, err := os.Open(filepath.Join(dir, BackupFile))
	if err != nil {
		return ""
	}
	defer f.Close()
	var head struct {
		Scope string `json:"scope"`
	}
	if err := json.NewDecoder(f).Decode(&head); err != nil {
		return ""
	}
	return head.Scope
}

// Existed is the scan's question whether a namespace found nowhere
// existed and was written away by regghost: it did when a backup under one
// of roots is named after it, and say is told the newest such backup and
// how to put it back.
func Existed(say notice.Func, roots ...string) func(ns string) bool {
	return func(ns string) bool {
		var dirs []string
		for i, root := range roots {
			if root != "" && !slices.Contains(roots[:i], root) {
				dirs = append(dirs, NamedAfter(root, "namespace "+ns)...)
			}
		}
		if len(dirs) == 0 {
			return false
		}
		last := dirs[len(dirs)-1]
		say.Info(fmt.Sprintf("note: nothing of namespace %s is in etcd; regghost's backup %s is named after it (what a purge of it took: `regghost restore %s` puts it back)", ns, last, last))
		return true
	}
}
