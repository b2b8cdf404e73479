package snapshot

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/regghost/regghost/pkg/backup"
)

// RestoreSource is what snapshot restore writes back from the logical
// snapshot at path (BackupFromLogicalPurge: its purge's keys under
// prefix, or with all every key). A snapshot inside a backup directory
// holds that directory (the restore journals there: a prune must not
// remove it meanwhile) until release. Every error says that nothing was
// restored.
func RestoreSource(path, prefix string, all bool) (b *backup.Backup, release func(), err error) {
	release = func() {}
	if _, err := os.Stat(filepath.Join(backup.DirOf(path), backup.BackupFile)); err == nil {
		if release, err = backup.Hold(backup.DirOf(path)); err != nil {
			return nil, nil, fmt.Errorf("%w; nothing was restored", err)
		}
	}
	b, err = BackupFromLogicalPurge(path, prefix, all)
	switch {
	case errors.Is(err, ErrNoPurgeBackup):
		err = fmt.Errorf("%w; by default snapshot restore writes back only the keys its purge deleted, as that backup names them; %s writes back every key of the snapshot absent now; nothing was restored", err, AllAbsentFlag)
	case err != nil:
		err = fmt.Errorf("%w; nothing was restored", err)
	case len(b.Entries) == 0 && all:
		err = fmt.Errorf("%s holds no key under %q; nothing was restored", path, prefix)
	case len(b.Entries) == 0:
		err = fmt.Errorf("%s holds no key of its purge under %q; nothing was restored", path, prefix)
	}
	if err != nil {
		release()
		return nil, nil, err
	}
	return b, release, nil
}
