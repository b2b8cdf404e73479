package backup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
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
	slug := strings.Trim(unsafeChars.ReplaceAllString(strings.ToLower(scope), "-"), "-")
	if len(slug) > 60 {
		slug = slug[:60]
	}
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
