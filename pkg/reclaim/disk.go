package reclaim

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/regghost/regghost/pkg/diskroom"
)

// FromFlag says a data directory was given with --data-dir.
const FromFlag = "--data-dir"

// growStep is what bbolt adds to a file at a time once it is past 16 MiB.
const growStep = 16 << 20

// rewriteNeed is what defragmenting m takes on its disk: the new file holds
// the pages in use (a tenth more for the pages bbolt leaves part-filled),
// and bbolt grows it by up to 16 MiB past that. The old file stays until
// the new one replaces it.
func rewriteNeed(inUse int64) uint64 {
	return uint64(inUse) + uint64(inUse)/10 + growStep
}

// dbPath is a member's db file under its data directory.
func dbPath(dataDir string) string { return filepath.Join(dataDir, "member", "snap", "db") }

// assignDataDirs places each data directory that is known on this node:
// given with --data-dir (by member name, or "" for the member on this
// node), or read from the node's etcd manifest for the member of that name.
// A directory given for no member, or without a member's db in it, is an
// error: a wrong --data-dir would check the wrong disk.
func assignDataDirs(o Options, members []Member) error {
	names := make([]string, 0, len(members))
	for _, m := range members {
		names = append(names, m.Name)
	}
	for name, dir := range o.DataDirs {
		i := -1
		if name == "" {
			var err error
			if i, err = localMember(members); err != nil {
				return fmt.Errorf("%s %s: %w; name it: %s NAME=%s", FromFlag, dir, err, FromFlag, dir)
			}
		} else {
			for j := range members {
				if members[j].Name == name {
					i = j
				}
			}
			if i < 0 {
				return fmt.Errorf("%s %s=%s: no member is named %s (members: %s)", FromFlag, name, dir, name, strings.Join(names, ", "))
			}
		}
		if _, err := os.Stat(dbPath(dir)); err != nil {
			return fmt.Errorf("%s %s: %s holds no member db: %w", FromFlag, dir, dir, err)
		}
		members[i].Disk = Disk{DataDir: dir, From: FromFlag}
	}
	if n := o.Node; n != nil && n.DataDir != "" {
		for i := range members {
			if members[i].Name == n.Name && members[i].Disk.DataDir == "" {
				members[i].Disk = Disk{DataDir: n.DataDir, From: n.Source}
			}
		}
	}
	return nil
}

// localMember is the one member whose client URLs are on this host: one
// member alone, or the one listening on a loopback or local address.
func localMember(members []Member) (int, error) {
	if len(members) == 1 {
		return 0, nil
	}
	var found []int
	for i := range members {
		for _, u := range append([]string{members[i].Endpoint}, members[i].urls...) {
			if isLocal(u) {
				found = append(found, i)
				break
			}
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return 0, errors.New("no member of the cluster listens on this host")
	}
	var names []string
	for _, i := range found {
		names = append(names, members[i].Name)
	}
	sort.Strings(names)
	return 0, fmt.Errorf("members %s all listen on this host", strings.Join(names, ", "))
}

// isLocal says whether an endpoint's host is this host: localhost, a
// loopback address or an address of one of its interfaces.
func isLocal(endpoint string) bool {
	host := endpoint
	if u, err := url.Parse(endpoint); err == nil && u.Host != "" {
		host = u.Host
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return false
	}
	if ip.IsLoopback() {
		return true
	}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}

// checkDisk reads the room on the disk under m's data directory for its
// rewrite. taken is what is written to the disk before (the snapshot, when
// backupRoot is on the same filesystem); 0 once it is written.
func checkDisk(m *Member, backupRoot string, taken uint64) Disk {
	d := Disk{DataDir: m.Disk.DataDir, From: m.Disk.From, Need: rewriteNeed(m.DBSizeInUse)}
	if d.DataDir == "" {
		d.Why = "its data directory is not on this node (or not known here: pass " + FromFlag + " NAME=DIR); make sure its disk has room for about its size in use"
		return d
	}
	snapDir := filepath.Dir(dbPath(d.DataDir))
	room, err := diskroom.Of(snapDir)
	if err != nil {
		d.Why = err.Error()
		return d
	}
	if taken > 0 && sameFilesystem(snapDir, backupRoot) {
		d.SharesBackup = true
		room.Free -= min(taken, room.Free)
	}
	d.Checked, d.Free, d.Keep, d.Fits = true, room.Free, room.Keep, room.Fits(d.Need)
	if !d.Fits {
		d.Why = fmt.Sprintf("the rewrite needs %d MiB; %s", d.Need>>20, room)
		if d.SharesBackup {
			d.Why += ", once the snapshot is written there"
		}
	}
	return d
}

// planSnapshot checks the backup root has room for a snapshot of the
// largest member's db.
func planSnapshot(root string, members []Member) SnapshotPlan {
	var size int64
	for _, m := range members {
		size = max(size, m.DBSize)
	}
	s := SnapshotPlan{Root: root, Need: uint64(size) + uint64(size)/10 + 4096}
	if root == "" {
		s.Why = "no backup directory: pass --backup-dir"
		return s
	}
	room, err := diskroom.Of(existing(root))
	if err != nil {
		s.Why = err.Error()
		return s
	}
	s.Free, s.Keep, s.Fits = room.Free, room.Keep, room.Fits(s.Need)
	if !s.Fits {
		s.Why = fmt.Sprintf("it needs %d MiB; %s; pass --backup-dir on another disk", s.Need>>20, room)
	}
	return s
}

// existing is dir, or its nearest parent that exists (a backup root is made
// only when the snapshot is taken).
func existing(dir string) string {
	for {
		if _, err := os.Stat(dir); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return dir
		}
		dir = parent
	}
}

// sameFilesystem says whether a and b (or their nearest existing parents)
// are on one filesystem.
func sameFilesystem(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	var sa, sb unix.Stat_t
	if unix.Stat(existing(a), &sa) != nil || unix.Stat(existing(b), &sb) != nil {
		return false
	}
	return sa.Dev == sb.Dev
}
