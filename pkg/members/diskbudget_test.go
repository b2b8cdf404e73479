package members

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"github.com/regghost/regghost/pkg/diskroom"
	"github.com/regghost/regghost/pkg/etcdmembers"
	"github.com/regghost/regghost/pkg/nodeconfig"
)

// fakeDisks are filesystems by path: the device of each existing path,
// and the room of each device. A path not listed does not exist.
func fakeDisks(devs map[string]uint64, rooms map[uint64]diskroom.Room) disks {
	return disks{
		dev: func(path string) (uint64, error) {
			if d, ok := devs[path]; ok {
				return d, nil
			}
			return 0, fmt.Errorf("stat %s: %w", path, fs.ErrNotExist)
		},
		room: func(dir string) (diskroom.Room, error) {
			r := rooms[devs[dir]]
			r.Dir = dir
			return r, nil
		},
	}
}

// threeMembers are m0 (leading), m1 and m2, each with a db of size.
func threeMembers(size int64) *Report {
	r := &Report{}
	for i := range 3 {
		r.Members = append(r.Members, Member{Member: etcdmembers.Member{Name: fmt.Sprintf("m%d", i), Leader: i == 0, DBSize: size,
			Endpoint: fmt.Sprintf("http://10.0.0.%d:2379", i+1)}})
	}
	return r
}

// TestDiskBudget: every byte a replacement writes on this machine is
// planned by filesystem (a device, not a path) before the first write, and
// the plan is refused unless each keeps its reserve once all are written.
// The node: /var/lib/regghost/backups (not made yet) and
// /var/lib/etcd on one filesystem, 44 GiB free, 10 GiB reserve, 10 GiB
// dbs: the evidence (33 GiB) fits alone, the learner's copy (11 GiB)
// fits alone, both leave about 0 GiB. A data directory that is a mount
// point of its own is measured on its own device, not its parent's.
func TestDiskBudget(t *testing.T) {
	const gib = int64(1) << 30
	room := func(free, keep int64) diskroom.Room { return diskroom.Room{Free: uint64(free), Keep: uint64(keep)} }
	shared := map[string]uint64{"/": 1, "/var": 1, "/var/lib": 1, "/var/lib/etcd": 1}
	mounted := map[string]uint64{"/": 1, "/var": 1, "/var/lib": 1, "/var/lib/etcd": 2}
	for _, tt := range []struct {
		name    string
		devs    map[string]uint64
		rooms   map[uint64]diskroom.Room
		node    string // the member this node's files describe
		want    string // in the refusal; "" fits
		budgets []string
	}{
		{"the issue's numbers: evidence and the learner's copy on one filesystem", shared, map[uint64]diskroom.Room{1: room(44*gib, 10*gib)}, "m1",
			"the filesystem of /var/lib (device 0:1) has 44.0 GiB free: this run writes 44.1 GiB there", []string{"/var/lib"}},
		{"the evidence alone, the member's node elsewhere", shared, map[uint64]diskroom.Room{1: room(44*gib, 10*gib)}, "m2", "", []string{"/var/lib"}},
		{"the data directory on a mount of its own with room", mounted, map[uint64]diskroom.Room{1: room(44*gib, 10*gib), 2: room(20*gib, 2*gib)}, "m1",
			"", []string{"/var/lib", "/var/lib/etcd"}},
		// Its parent's filesystem has room: measuring filepath.Dir of the
		// data directory would let it through.
		{"the data directory on a mount of its own, too small", mounted, map[uint64]diskroom.Room{1: room(100*gib, 10*gib), 2: room(12*gib, 2*gib)}, "m1",
			"the filesystem of /var/lib/etcd (device 0:2) has 12.0 GiB free", []string{"/var/lib", "/var/lib/etcd"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := &replaceRun{o: ReplaceOptions{Member: "m1", EvidenceRoot: "/var/lib/regghost/backups",
				Node: &nodeconfig.EtcdMember{Name: tt.node, DataDir: "/var/lib/etcd"}}, fs: fakeDisks(tt.devs, tt.rooms)}
			p := &replacePlan{res: &Replacement{}}
			err := r.diskBudget(p, threeMembers(10*gib))
			if (tt.want == "") != (err == nil) || (err != nil && (!errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tt.want))) {
				t.Errorf("diskBudget: %v, want %q", err, tt.want)
			}
			var dirs []string
			for _, b := range p.res.Disk {
				dirs = append(dirs, b.Dir)
				if b.Left != b.Free-b.Written || b.Fits != (b.Left >= b.Reserve) {
					t.Errorf("budget of %s: %+v", b.Dir, b)
				}
			}
			if strings.Join(dirs, " ") != strings.Join(tt.budgets, " ") {
				t.Errorf("filesystems %v, want %v", dirs, tt.budgets)
			}
		})
	}
}

// TestDiskBudgetCountsOneDeviceOnce: two paths on one device are one
// filesystem, whatever their paths; the evidence, the copy, the log and
// the directory moved aside are all listed, the last written nothing.
func TestDiskBudgetCountsOneDeviceOnce(t *testing.T) {
	d := fakeDisks(map[string]uint64{"/": 1, "/srv": 7, "/data": 7}, map[uint64]diskroom.Room{1: {Free: 1 << 40}, 7: {Free: 10 << 30, Keep: 1 << 30}})
	b, err := d.budget([]DiskWrite{{What: "a", Path: "/srv/backups", Bytes: 5 << 30}, {What: "b", Path: "/data/etcd", Bytes: 5 << 30},
		{What: "moved aside", Path: "/data/etcd"}})
	if err != nil || len(b) != 1 || b[0].Written != 10<<30 || b[0].Fits || len(b[0].Writes) != 3 || b[0].Dir != "/srv" {
		t.Fatalf("one device, two paths: %+v, %v", b, err)
	}
}

// TestOnNodeMovesWhatAMountHolds: a data directory that is a mount point
// of its own cannot be renamed (EBUSY): what it holds, member/, moves
// aside within it; a --wal-dir that is one cannot hold a new log (etcd
// removes it and renames a new one into its place), so etcd gets a new
// one within it. A directory that is no mount point is renamed whole.
func TestOnNodeMovesWhatAMountHolds(t *testing.T) {
	devs := map[string]uint64{"/": 1, "/var": 1, "/var/lib": 1, "/var/lib/etcd": 2, "/wal": 1, "/wal/etcd": 3, "/data": 1, "/data/etcd": 1}
	for _, tt := range []struct {
		name          string
		data, wal     string
		want, notWant []string
	}{
		{"a mounted data directory", "/var/lib/etcd", "",
			[]string{"mv /var/lib/etcd/member /var/lib/etcd/member.wrong-m1", "--data-dir /var/lib/etcd (holding no member/ now)"},
			[]string{"mv /var/lib/etcd /var/lib/etcd.wrong-m1", "an empty --data-dir"}},
		{"a mounted --wal-dir", "/data/etcd", "/wal/etcd",
			[]string{"mv /data/etcd /data/etcd.wrong-m1", "mkdir /wal/etcd/wal.wrong-m1 && mv /wal/etcd/*.wal /wal/etcd/wal.wrong-m1/", ", --wal-dir /wal/etcd/wal,"},
			[]string{"mv /wal/etcd /wal/etcd.wrong-m1"}},
		{"no mount point", "/data/etcd", "", []string{"mv /data/etcd /data/etcd.wrong-m1", "an empty --data-dir /data/etcd"}, []string{"member.wrong"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := &replaceRun{o: ReplaceOptions{Member: "m1", Node: &nodeconfig.EtcdMember{Name: "m1", DataDir: tt.data, WalDir: tt.wal, Source: "kubeadm"}},
				fs: fakeDisks(devs, nil)}
			steps := strings.Join(onNode("m1", []string{"http://10.0.0.2:2380"}, nil, r.localNode(), 0), "\n")
			for _, w := range tt.want {
				if !strings.Contains(steps, w) {
					t.Errorf("the steps miss %q:\n%s", w, steps)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(steps, w) {
					t.Errorf("the steps say %q:\n%s", w, steps)
				}
			}
		})
	}
}
