package reclaim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/nodeconfig"
	"github.com/regghost/regghost/pkg/notice"
	"github.com/regghost/regghost/pkg/snapshot"
)

// member is one embedded etcd with a quota, and its data directory.
type member struct {
	stop func()
	cli  *clientv3.Client
	ep   string
	dir  string
}

// start runs an embedded etcd on dir with a quota of quota bytes.
func start(t *testing.T, dir string, quota int64) member {
	t.Helper()
	stop, cli, ep := etcdtest.StartServer(t, func(c *embed.Config) {
		c.Dir = dir
		c.QuotaBackendBytes = quota
	})
	return member{stop: stop, cli: cli, ep: ep, dir: dir}
}

func (m member) options(t *testing.T) Options {
	return Options{Client: m.cli, Config: clientv3.Config{Endpoints: []string{m.ep}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()},
		BackupRoot: filepath.Join(t.TempDir(), "backups"), DataDirs: map[string]string{"": m.dir}}
}

// fill puts 1 MiB values until etcd refuses a put for lack of space, and
// returns how many it took.
func fill(t *testing.T, cli *clientv3.Client) int {
	t.Helper()
	v := strings.Repeat("x", 1<<20)
	for i := 0; i < 1000; i++ {
		_, err := cli.Put(context.Background(), fmt.Sprintf("/big/%03d", i), v)
		if errors.Is(err, rpctypes.ErrNoSpace) {
			return i
		}
		if err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
	}
	t.Fatal("etcd never ran out of space")
	return 0
}

func noSpace(t *testing.T, cli *clientv3.Client) bool {
	t.Helper()
	resp, err := cli.AlarmList(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range resp.Alarms {
		if a.Alarm == pb.AlarmType_NOSPACE {
			return true
		}
	}
	return false
}

func TestSurveySingleMember(t *testing.T) {
	m := start(t, t.TempDir(), 64<<20)
	p, err := Survey(context.Background(), m.options(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Refusals) > 0 || p.Advice != "" || p.Datastore.Name != "etcd" {
		t.Fatalf("plan refused: %+v", p)
	}
	if len(p.Members) != 1 {
		t.Fatalf("members: %+v", p.Members)
	}
	got := p.Members[0]
	if !got.Healthy || !got.Leader || got.DBSize <= 0 || got.Endpoint != m.ep {
		t.Errorf("member: %+v", got)
	}
	if got.Quota != (Quota{Bytes: 64 << 20, Source: QuotaFromStatus}) {
		t.Errorf("quota: %+v, want 64 MiB from the member's Status", got.Quota)
	}
	if !got.Disk.Checked || !got.Disk.Fits || got.Disk.DataDir != m.dir || got.Disk.From != FromFlag || got.Disk.Need < growStep {
		t.Errorf("disk: %+v", got.Disk)
	}
	if p.NoSpace() || !p.Snapshot.Fits || len(p.Warnings) > 0 {
		t.Errorf("alarms %+v, snapshot %+v, warnings %q", p.Alarms, p.Snapshot, p.Warnings)
	}
}

// TestMetricsQuota reads the quota gauge etcd before 3.6 offers instead of
// Status's dbSizeQuota, from the member's /metrics.
func TestMetricsQuota(t *testing.T) {
	m := start(t, t.TempDir(), 48<<20)
	got, err := metricsQuota(context.Background(), m.options(t), m.ep)
	if err != nil || got != 48<<20 {
		t.Fatalf("metricsQuota = %d, %v; want %d", got, err, 48<<20)
	}
	if _, err := metricsQuota(context.Background(), m.options(t), "unix:///run/kine.sock"); err == nil {
		t.Error("a unix socket has no /metrics to read")
	}
}

func TestSurveyDataDirs(t *testing.T) {
	m := start(t, t.TempDir(), 64<<20)
	empty := t.TempDir()
	manifest := &nodeconfig.EtcdMember{Source: "kubeadm static pod /etc/kubernetes/manifests/etcd.yaml", Name: "default", DataDir: m.dir, QuotaBytes: 8 << 30}
	for _, tc := range []struct {
		name string
		dirs map[string]string
		node *nodeconfig.EtcdMember
		want string
	}{
		{"no member of that name", map[string]string{"cp-9": m.dir}, nil, "no member is named cp-9 (members: default)"},
		{"no db in the directory", map[string]string{"default": empty}, nil, empty + " holds no member db"},
		{"the member by name", map[string]string{"default": m.dir}, nil, ""},
		// The manifest's quota is not taken: the member says its own.
		{"the member of the node's manifest", nil, manifest, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := m.options(t)
			o.DataDirs, o.Node = tc.dirs, tc.node
			p, err := Survey(context.Background(), o)
			if tc.want == "" {
				if err != nil || !p.Members[0].Disk.Checked || p.Members[0].Quota.Source != QuotaFromStatus {
					t.Fatalf("Survey: %v, %+v", err, p)
				}
				if tc.node != nil && p.Members[0].Disk.From != tc.node.Source {
					t.Errorf("disk from %q, want the manifest", p.Members[0].Disk.From)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Survey error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestRunBringsWritesBack fills etcd until NOSPACE, deletes what filled it
// (etcd serves deletes under the alarm), and reclaims: the snapshot holds
// the keyspace before the compaction, the member shrinks, the alarm is
// disarmed and a put is served again.
func TestRunBringsWritesBack(t *testing.T) {
	m := start(t, t.TempDir(), 16<<20)
	n := fill(t, m.cli)
	if !noSpace(t, m.cli) {
		t.Fatal("no NOSPACE alarm after the quota was reached")
	}
	if _, err := m.cli.Delete(context.Background(), "/big/", clientv3.WithPrefix()); err != nil {
		t.Fatalf("delete under NOSPACE: %v", err)
	}
	o := m.options(t)
	// The plan warns, before anything is done, that only this node's lock
	// will be held; what it announced, Run does not say again.
	p, err := Survey(context.Background(), o)
	if err != nil || len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "only this node's lock will be held") || !strings.Contains(p.Warnings[0], "not one on another node") {
		t.Fatalf("Survey under NOSPACE: %v, warnings %q", err, p.Warnings)
	}
	var notices []notice.Notice
	o.Warned, o.Notices = p.Warnings, notice.Collect(&notices)
	var steps []string
	o.Progress = func(s Step) { steps = append(steps, s.Kind) }
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if strings.Contains(strings.Join(notice.Texts(notices), "\n"), "warning") {
		t.Errorf("Run said again what the plan warned of: %q", notice.Texts(notices))
	}
	if want := []string{StepSnapshot, StepCompacted, StepDefragmenting, StepDefragmented, StepDisarm}; strings.Join(steps, ",") != strings.Join(want, ",") {
		t.Errorf("steps %v, want %v", steps, want)
	}
	info, err := snapshot.VerifySnapshot(filepath.Join(res.Dir, snapshot.SnapshotFile))
	if err != nil || info.Revision != res.Snapshot.Revision {
		t.Fatalf("snapshot: %+v, %v", info, err)
	}
	if b, err := backup.ReadBackup(res.Dir); err != nil || b.Action != Action || b.Snapshot.Revision != info.Revision {
		t.Errorf("backup beside the snapshot: %+v, %v", b, err)
	}
	if res.Compaction == nil || res.Compaction.Revision != info.Revision {
		t.Errorf("compaction %+v, want at the snapshot's revision %d", res.Compaction, info.Revision)
	}
	// The compaction ended the history before the snapshot's revision.
	if _, err := m.cli.Get(context.Background(), "/big/000", clientv3.WithRev(info.Revision-1)); !errors.Is(err, rpctypes.ErrCompacted) {
		t.Errorf("read before the compaction: %v, want ErrCompacted", err)
	}
	if len(res.Members) != 1 || res.Members[0].Outcome != Defragmented || res.Members[0].After >= res.Members[0].Before || res.Members[0].After >= 16<<20 {
		t.Errorf("members: %+v", res.Members)
	}
	if res.Disarm == nil || !res.Disarm.Disarmed || len(res.Disarm.Alarms) != 1 {
		t.Errorf("disarm: %+v", res.Disarm)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "only this node's lock") {
		t.Errorf("warnings %q, want the one that says only this node's lock is held under NOSPACE", res.Warnings)
	}
	if noSpace(t, m.cli) {
		t.Error("NOSPACE is still raised")
	}
	if _, err := m.cli.Put(context.Background(), "/after", "back"); err != nil {
		t.Errorf("put after reclaim: %v (filled with %d puts)", err, n)
	}
}

// TestRunLeavesAlarmOverQuota: a member still over its quota after its
// defragmentation keeps the alarm (etcd would raise it at the next write):
// reclaim says so and leaves it.
func TestRunLeavesAlarmOverQuota(t *testing.T) {
	dir := t.TempDir()
	t.Run("write 8 MiB under a 64 MiB quota", func(t *testing.T) {
		m := start(t, dir, 64<<20)
		v := strings.Repeat("x", 1<<20)
		for i := 0; i < 8; i++ {
			if _, err := m.cli.Put(context.Background(), fmt.Sprintf("/keep/%d", i), v); err != nil {
				t.Fatal(err)
			}
		}
	})
	m := start(t, dir, 4<<20)
	if _, err := m.cli.Put(context.Background(), "/one-more", "x"); !errors.Is(err, rpctypes.ErrNoSpace) {
		t.Fatalf("put over the new quota: %v, want ErrNoSpace", err)
	}
	res, err := Run(context.Background(), m.options(t))
	if err == nil || !strings.Contains(err.Error(), "NOSPACE was left raised") {
		t.Fatalf("Run: %v", err)
	}
	if res.Disarm == nil || res.Disarm.Disarmed || len(res.Disarm.Over) != 1 || res.Members[0].Outcome != Defragmented {
		t.Errorf("result: %+v, disarm %+v", res.Members, res.Disarm)
	}
	if !noSpace(t, m.cli) {
		t.Error("NOSPACE was disarmed over the quota")
	}
	for i := 0; i < 8; i++ {
		if resp, err := m.cli.Get(context.Background(), fmt.Sprintf("/keep/%d", i)); err != nil || len(resp.Kvs) != 1 {
			t.Errorf("/keep/%d after reclaim: %v", i, err)
		}
	}
}

func TestRunRefusesWithoutRoom(t *testing.T) {
	m := start(t, t.TempDir(), 64<<20)
	o := m.options(t)
	o.BackupRoot = ""
	res, err := Run(context.Background(), o)
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "pass --backup-dir") || res.Snapshot != nil {
		t.Fatalf("Run without a backup directory: %v", err)
	}
	if _, err := os.Stat(o.BackupRoot); err == nil {
		t.Error("a refused run wrote something")
	}
}

// TestRunStops: the run stops at the first member that is not healthy
// before its turn, or whose defragmentation fails, says where, and leaves
// NOSPACE raised; the snapshot taken first stays.
func TestRunStops(t *testing.T) {
	for _, tc := range []struct {
		name, at, outcome, why string
	}{
		{"not healthy before its turn", StepCompacted, NotReached, "member default is not healthy: it does not answer Status"},
		{"its defragmentation fails", StepDefragmenting, Failed, "defragmentation failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Under NOSPACE only this node's lock is held: the etcd
			// lock's release would wait for the stopped server.
			m := start(t, t.TempDir(), 16<<20)
			fill(t, m.cli)
			o := m.options(t)
			o.CheckTimeout = time.Second
			var notices []notice.Notice
			o.Notices = notice.Collect(&notices)
			o.Progress = func(s Step) {
				if s.Kind == tc.at {
					m.stop()
				}
			}
			// A Defragment sent to a server already gone waits for it
			// until the deadline, as etcd's client waits for a connection.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			res, err := Run(ctx, o)
			if err == nil || !strings.Contains(err.Error(), "stopped at member default: "+tc.why) || !strings.Contains(err.Error(), "NOSPACE was not disarmed") {
				t.Fatalf("Run: %v", err)
			}
			s := res.Stop
			if s == nil || s.Member != "default" || len(s.Done) != 0 || strings.Join(s.NotDone, ",") != "default" || res.Disarm != nil {
				t.Fatalf("stop %+v, disarm %+v", s, res.Disarm)
			}
			if len(res.Members) != 1 || res.Members[0].Outcome != tc.outcome {
				t.Errorf("members: %+v, want %s", res.Members, tc.outcome)
			}
			if _, err := snapshot.VerifySnapshot(res.Snapshot.Path); err != nil {
				t.Errorf("snapshot: %v", err)
			}
			// No plan was shown (Options.Warned): Run says it.
			if !strings.Contains(strings.Join(notice.Texts(notices), "\n"), "warning: etcd's NOSPACE alarm is raised") {
				t.Errorf("notices %q, want the warning that only this node's lock is held", notice.Texts(notices))
			}
		})
	}
}

// TestRunRefusesWhileLocked: another regghost writing on this node (its
// lock held) refuses the run before anything is written.
func TestRunRefusesWhileLocked(t *testing.T) {
	t.Setenv(etcdwrite.LockDirEnv, t.TempDir())
	m := start(t, t.TempDir(), 64<<20)
	st, err := m.cli.Status(context.Background(), m.ep)
	if err != nil {
		t.Fatal(err)
	}
	unlock, _, err := etcdwrite.NodeLock(fmt.Sprintf("%x", st.Header.ClusterId), "regghost purge namespace kb-system")
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	o := m.options(t)
	res, err := Run(context.Background(), o)
	if !errors.Is(err, etcdwrite.ErrLocked) || !strings.Contains(err.Error(), "regghost purge namespace kb-system") || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("Run while locked: %v", err)
	}
	if res.Snapshot != nil {
		t.Error("a snapshot was taken")
	}
	if _, err := os.Stat(o.BackupRoot); err == nil {
		t.Error("a refused run wrote to the backup directory")
	}
}
