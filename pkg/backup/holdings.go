package backup

import (
	"os"
	"path/filepath"

	"github.com/regghost/regghost/pkg/diskroom"
)

// Holdings is what the backups under a root hold on its filesystem, beside
// what that filesystem has free and must keep (diskroom's reserve): each
// backup of a purge holds a snapshot the size of the database, on a disk
// etcd's data may share.
type Holdings struct {
	Root    string `json:"root"`
	Backups int    `json:"backups"`
	Bytes   int64  `json:"bytes"`
	// Free and Keep are the filesystem's free bytes and the reserve every
	// write of regghost leaves.
	Free uint64 `json:"free"`
	Keep uint64 `json:"keep"`
}

// HoldingsOf counts the backup directories under root and the bytes they
// hold; a root that does not exist holds nothing (the filesystem is that
// of its nearest existing parent).
func HoldingsOf(root string) (Holdings, error) {
	h := Holdings{Root: root}
	entries, err := os.ReadDir(root)
	if err != nil && !os.IsNotExist(err) {
		return h, err
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		n, err := dirBytes(filepath.Join(root, e.Name()))
		if err != nil {
			return h, err
		}
		h.Backups++
		h.Bytes += n
	}
	dir := root
	for {
		if _, err := os.Stat(dir); err == nil || filepath.Dir(dir) == dir {
			break
		}
		dir = filepath.Dir(dir)
	}
	room, err := diskroom.Of(dir)
	if err != nil {
		return h, err
	}
	h.Free, h.Keep = room.Free, room.Keep
	return h, nil
}
