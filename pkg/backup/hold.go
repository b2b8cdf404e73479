package backup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// A backup directory is flocked while it is used: shared by a restore (or
// the undo of a recovery) for as long as it reads and journals to it,
// exclusive by a prune while it removes it. A prune never removes a backup
// a running restore holds, and a restore never starts on one being pruned.

// ErrInUse is returned (wrapped) when another regghost holds a backup.
var ErrInUse = errors.New("in use by another regghost")

// Hold takes a shared hold on the backup directory dir for a restore;
// release it when done. It fails at once, with ErrInUse, while a prune
// removes dir.
func Hold(dir string) (release func(), err error) {
	return lockDir(dir, syscall.LOCK_SH, "a prune is removing it")
}

// holdToRemove takes the exclusive hold a prune removes dir under. It
// fails at once, with ErrInUse, while a restore holds dir.
func holdToRemove(dir string) (release func(), err error) {
	return lockDir(dir, syscall.LOCK_EX, "a restore is using it")
}

func lockDir(dir string, how int, who string) (func(), error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("open backup %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("backup %s is %w (%s)", dir, ErrInUse, who)
		}
		return nil, fmt.Errorf("lock backup %s: %w", dir, err)
	}
	return func() { f.Close() }, nil
}

// DirOf returns the directory of a backup given as a directory or file.
func DirOf(path string) string {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return path
	}
	return filepath.Dir(path)
}
