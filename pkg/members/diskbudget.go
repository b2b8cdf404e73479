package members

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/regghost/regghost/pkg/diskroom"
)

// DiskWrite is something a replacement writes on this machine, or leaves
// there.
type DiskWrite struct {
	// What says what it is.
	What string `json:"what"`
	// Path is where it goes.
	Path string `json:"path"`
	// Bytes is what it writes; 0 for a directory moved aside, a rename
	// within its filesystem that writes nothing and frees nothing.
	Bytes int64 `json:"bytes"`
}

// DiskBudget is one filesystem a replacement writes on: what it has free
// before the first write, what the replacement writes there in all, and
// what is left against what must stay free. Paths share a filesystem when
// the nearest existing directory of each is on the same device.
type DiskBudget struct {
	// Dir is the directory it was measured at: the nearest existing one
	// of the first path written there.
	Dir string `json:"dir"`
	// Device is the filesystem's device, major:minor (as lsblk and
	// /proc/self/mountinfo show it).
	Device string `json:"device"`
	// Free is what it has free now, as an unprivileged writer sees it.
	Free int64 `json:"free"`
	// Written is the sum of Writes.
	Written int64 `json:"written"`
	// Left is Free less Written; negative when they do not fit at all.
	Left int64 `json:"left"`
	// Reserve is what must stay free (diskroom.Reserve: a tenth of the
	// filesystem, at least 1 GiB): kubelet evicts pods below 10% free.
	Reserve int64 `json:"reserve"`
	// Fits is set when Left keeps Reserve.
	Fits   bool        `json:"fits"`
	Writes []DiskWrite `json:"writes"`
}

// walSegments is what a new member's write-ahead log takes at once: etcd
// preallocates a 64 MiB segment, and the next one beside it.
const walSegments = 2 * 64 << 20

// disks reads the filesystems a replacement writes on; a test stands in
// for the host's.
type disks struct {
	// dev is the device ID of what is at path (syscall.Stat_t.Dev); an
	// error wrapping fs.ErrNotExist when nothing is there.
	dev func(path string) (uint64, error)
	// room is the room of dir's filesystem.
	room func(dir string) (diskroom.Room, error)
}

// hostDisks are this machine's filesystems.
var hostDisks = disks{dev: deviceOf, room: diskroom.Of}

// deviceOf is the device ID of the filesystem path is on.
func deviceOf(path string) (uint64, error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, fmt.Errorf("stat %s: no device ID", path)
	}
	return uint64(sys.Dev), nil // Dev is not uint64 on every platform
}

// nearest is the nearest existing directory at or above path, and its
// device.
func (d disks) nearest(path string) (string, uint64, error) {
	p := filepath.Clean(path)
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	for {
		dev, err := d.dev(p)
		if err == nil {
			return p, dev, nil
		}
		parent := filepath.Dir(p)
		if !errors.Is(err, fs.ErrNotExist) || parent == p {
			return "", 0, fmt.Errorf("device of %s: %w", path, err)
		}
		p = parent
	}
}

// mountPoint reports whether dir is a mount point of its own: its device
// is not its parent's. A directory that cannot be read is taken for none.
func (d disks) mountPoint(dir string) bool {
	dir = filepath.Clean(dir)
	dev, err := d.dev(dir)
	if err != nil {
		return false
	}
	parent, err := d.dev(filepath.Dir(dir))
	return err == nil && parent != dev
}

// budget groups writes by the filesystem each lands on, in the order they
// come, and says of each whether it keeps its reserve once all of them
// are written. A path whose filesystem cannot be read is an error.
func (d disks) budget(writes []DiskWrite) ([]DiskBudget, error) {
	var out []DiskBudget
	byDev := map[uint64]int{}
	for _, w := range writes {
		dir, dev, err := d.nearest(w.Path)
		if err != nil {
			return nil, err
		}
		i, ok := byDev[dev]
		if !ok {
			room, err := d.room(dir)
			if err != nil {
				return nil, err
			}
			out = append(out, DiskBudget{Dir: dir, Device: fmt.Sprintf("%d:%d", unix.Major(dev), unix.Minor(dev)),
				Free: int64(room.Free), Reserve: int64(room.Keep)})
			i = len(out) - 1
			byDev[dev] = i
		}
		out[i].Writes = append(out[i].Writes, w)
		out[i].Written += w.Bytes
	}
	for i := range out {
		b := &out[i]
		b.Left = b.Free - b.Written
		b.Fits = b.Left >= b.Reserve
	}
	return out, nil
}

// words say the budget of a filesystem that does not fit, for a refusal.
func (b DiskBudget) words() string {
	var what []string
	for _, w := range b.Writes {
		if w.Bytes > 0 {
			what = append(what, fmt.Sprintf("%s %s", w.What, sizeWords(w.Bytes)))
		}
	}
	return fmt.Sprintf("the filesystem of %s (device %s) has %s free: this run writes %s there (%s), which leaves %s, less than the %s it must keep free "+
		"(kubelet evicts pods below 10%% free, and etcd's data may share it)",
		b.Dir, b.Device, sizeWords(b.Free), sizeWords(b.Written), strings.Join(what, "; "), sizeWords(b.Left), sizeWords(b.Reserve))
}

// disks are the filesystems the run reads.
func (r *replaceRun) disks() disks {
	if r.fs.dev == nil || r.fs.room == nil {
		return hostDisks
	}
	return r.fs
}

// diskWrites are every byte a new replacement writes on this machine,
// before the first is written: the evidence (every answering member's
// snapshot, and 10% more, as its record beside it); on the member's own
// node, the learner's copy of the leader's db (and 10% more: it grows
// meanwhile) and its write-ahead log, beside the directories moved aside,
// which stay. Elsewhere the node steps say what the member's node needs.
func (r *replaceRun) diskWrites(before *Report) []DiskWrite {
	var names []string
	var evidence int64
	for _, m := range saved(before) {
		evidence += m.DBSize + 4096
		names = append(names, m.Name)
	}
	out := []DiskWrite{{What: fmt.Sprintf("the evidence: the snapshots of %s, and 10%% more", strings.Join(names, ", ")),
		Path: r.o.EvidenceRoot, Bytes: evidence + evidence/10}}
	node := r.localNode()
	if node == nil || node.DataDir == "" {
		return out
	}
	db := copySize(before, r.o.Member)
	wal := node.DataDir
	if node.WalDir != "" {
		wal = node.WalDir
	}
	out = append(out,
		DiskWrite{What: "the learner's copy of the leader's db, and 10% more", Path: node.DataDir, Bytes: db + db/10},
		DiskWrite{What: "the learner's write-ahead log (two 64 MiB segments)", Path: wal, Bytes: walSegments},
		DiskWrite{What: r.o.Member + "'s data directory moved aside (a rename: nothing written, nothing freed)", Path: node.DataDir})
	if node.WalDir != "" {
		out = append(out, DiskWrite{What: r.o.Member + "'s --wal-dir moved aside (a rename: nothing written, nothing freed)", Path: node.WalDir})
	}
	return out
}

// diskBudget plans, before the first write, every byte the replacement
// writes on this machine, by filesystem, into the plan, and refuses
// unless each filesystem keeps its reserve once all of them are written.
func (r *replaceRun) diskBudget(p *replacePlan, before *Report) error {
	if r.o.EvidenceRoot == "" {
		return fmt.Errorf("%w: no directory for the evidence: pass --backup-dir; nothing was changed", ErrRefused)
	}
	budget, err := r.disks().budget(r.diskWrites(before))
	if err != nil {
		return fmt.Errorf("%w: the free space this run needs cannot be read: %w; nothing was changed", ErrRefused, err)
	}
	p.res.Disk = budget
	for _, b := range budget {
		if !b.Fits {
			return fmt.Errorf("%w: %s; make room first; nothing was changed", ErrRefused, b.words())
		}
	}
	return nil
}

// takeUpDisk plans, for a replacement taken up before its node steps,
// what the learner writes on this node when it is the member's: the copy
// of the db (as large as the largest snapshot of the evidence) and its
// write-ahead log. The member is out of the cluster already: a budget
// that does not fit is said, not refused.
func (r *replaceRun) takeUpDisk(p *replacePlan, rec *replaceRecord) {
	node := r.localNode()
	if node == nil || node.DataDir == "" {
		return
	}
	var db int64
	for _, e := range rec.Evidence {
		db = max(db, e.Size)
	}
	wal := node.DataDir
	if node.WalDir != "" {
		wal = node.WalDir
	}
	budget, err := r.disks().budget([]DiskWrite{
		{What: "the learner's copy of the leader's db, and 10% more", Path: node.DataDir, Bytes: db + db/10},
		{What: "the learner's write-ahead log (two 64 MiB segments)", Path: wal, Bytes: walSegments},
	})
	if err != nil {
		p.res.Notes = append(p.res.Notes, "the free space of this node's etcd disk could not be read: "+err.Error())
		return
	}
	p.res.Disk = budget
	for _, b := range budget {
		if !b.Fits {
			p.res.Notes = append(p.res.Notes, fmt.Sprintf("%s: make room there before its etcd starts", b.words()))
		}
	}
}

// saved are the members whose snapshot is the evidence: the voting
// members that answer.
func saved(r *Report) []Member {
	var out []Member
	for _, m := range r.Members {
		if !m.Learner && m.Unreachable == "" && m.Endpoint != "" {
			out = append(out, m)
		}
	}
	return out
}

// copySize is the size of the db a new member copies: the largest of the
// members other than member (the leader, or the one the leadership moves
// to).
func copySize(r *Report, member string) int64 {
	var n int64
	if r == nil {
		return 0
	}
	for _, m := range r.Members {
		if m.Name != member && !m.Learner {
			n = max(n, m.DBSize)
		}
	}
	return n
}
