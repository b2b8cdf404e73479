// Package diskroom keeps room on a control-plane node's disk. A file
// regghost writes for its own use (an unzipped snapshot, a spill file of
// findings) must not take the space kubelet and etcd need: the node's disk
// filling up is an incident of its own, and often the one being debugged.
package diskroom

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Reserve is what must stay free on a filesystem of total bytes: a tenth of
// it (kubelet's default hard eviction threshold is nodefs.available<10%)
// and at least 1 GiB (etcd's data directory may share it).
func Reserve(total uint64) uint64 { return max(total/10, 1<<30) }

// Room is the free space of the filesystem that holds dir, as an
// unprivileged writer sees it, and what of it must stay free.
type Room struct {
	Dir        string
	Free, Keep uint64
}

// Of reads the room of dir's filesystem.
func Of(dir string) (Room, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return Room{}, fmt.Errorf("free space of %s: %w", dir, err)
	}
	bs := uint64(st.Bsize)
	return Room{Dir: dir, Free: st.Bavail * bs, Keep: Reserve(st.Blocks * bs)}, nil
}

// Fits reports whether need more bytes leave the reserve free.
func (r Room) Fits(need uint64) bool { return r.Free >= need && r.Free-need >= r.Keep }

// String says the room in words, for an error.
func (r Room) String() string {
	return fmt.Sprintf("%s has %d MiB free and must keep %d MiB (kubelet evicts pods below 10%% free, and etcd may share the disk)", r.Dir, r.Free>>20, r.Keep>>20)
}
