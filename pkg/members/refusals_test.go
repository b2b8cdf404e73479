package members

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
	"golang.org/x/sys/unix"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/etcdmembers"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/nodeconfig"
	"github.com/regghost/regghost/pkg/notice"
)

// TestStanding: a record of a replacement under way is taken up only
// while the member list shows that replacement: removed and not added
// back, a learner it added (or added with its answer lost), a voter it
// added and promoted. A member never removed, or another member at its
// peer URLs (replaced by hand since), makes the record stale: a new
// replacement then runs with every guard.
func TestStanding(t *testing.T) {
	peers := []string{"http://10.0.0.2:2380"}
	rec := func(learner string) *replaceRecord {
		return &replaceRecord{Stage: recordRemoving, Member: "m1", ID: "a1", PeerURLs: peers, LearnerID: learner}
	}
	at := func(id uint64, learner bool) []*pb.Member {
		return []*pb.Member{{ID: 0xa0, Name: "m0", PeerURLs: []string{"http://10.0.0.1:2380"}}, {ID: id, Name: "m1", PeerURLs: peers, IsLearner: learner}}
	}
	for _, tt := range []struct {
		name string
		rec  *replaceRecord
		list []*pb.Member
		want takeUp
	}{
		{"removed, not added back", rec(""), at(0, false)[:1], takeUpAdd},
		{"never removed", rec(""), at(0xa1, false), takeUpStale},
		{"the learner it added", rec("b1"), at(0xb1, true), takeUpPromote},
		{"a learner added with the answer lost", rec(""), at(0xb1, true), takeUpPromote},
		{"another learner", rec("b1"), at(0xc1, true), takeUpStale},
		{"the learner it added, promoted", rec("b1"), at(0xb1, false), takeUpCompare},
		{"a voter it did not add", rec("b1"), at(0xc1, false), takeUpStale},
		{"a voter, no learner recorded", rec(""), at(0xc1, false), takeUpStale},
		// A run stopped before the removal, the member moved since
		// (etcdctl member update keeps its ID): never taken up.
		{"never removed, its peer URLs updated since", rec(""),
			[]*pb.Member{{ID: 0xa0, Name: "m0", PeerURLs: []string{"http://10.0.0.1:2380"}}, {ID: 0xa1, Name: "m1", PeerURLs: []string{"http://10.0.0.9:2380"}}}, takeUpStale},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, why := standing(tt.rec, tt.list)
			if got != tt.want || (got == takeUpStale) != (why != "") {
				t.Errorf("standing: %v (%q), want %v", got, why, tt.want)
			}
		})
	}
}

// TestDegradedAndWindow: before a removal the other members must carry
// the cluster (no error, no NOSPACE, not behind in applying), and the
// window says what fault tolerance is left.
func TestDegradedAndWindow(t *testing.T) {
	m := func(name string) Member {
		return Member{Member: etcdmembers.Member{Name: name, RaftIndex: 100, AppliedIndex: 100}}
	}
	for _, tt := range []struct {
		name   string
		change func(*Report)
		want   string
	}{
		{"healthy", func(*Report) {}, ""},
		{"an error", func(r *Report) { r.Members[2].Errors = []string{"slow fdatasync"} }, "m2 reports slow fdatasync"},
		{"NOSPACE on another", func(r *Report) { r.Members[0].Alarms = []string{"NOSPACE"} }, "m0 raised NOSPACE"},
		{"NOSPACE on the cluster", func(r *Report) { r.ClusterAlarms = []string{"NOSPACE"} }, "whole cluster"},
		{"applying far behind", func(r *Report) { r.Members[2].RaftIndex = 9000 }, "8900 raft entries"},
		{"the member replaced is the sick one", func(r *Report) { r.Members[1].Errors = []string{"corrupt"} }, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := &Report{Members: []Member{m("m0"), m("m1"), m("m2")}}
			tt.change(r)
			if got := degraded(r, "m1"); (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("degraded: %q, want %q", got, tt.want)
			}
		})
	}
	for _, tt := range []struct {
		members, voters, tolerates int
		down                       bool
		says                       string
	}{
		{3, 2, 0, false, "survives no further failure"},
		{5, 4, 1, false, "survives 1 more failure"},
		{3, 2, 0, true, "already runs on 2 voting members"},
	} {
		r := &Report{}
		for i := range tt.members {
			r.Members = append(r.Members, m(fmt.Sprintf("m%d", i)))
		}
		w := window(r, "m1", tt.down)
		if w.Voters != tt.voters || w.Tolerates != tt.tolerates || !strings.Contains(strings.Join(w.Words, " "), tt.says) ||
			!strings.Contains(strings.Join(w.Words, " "), "If one of them fails inside the window") {
			t.Errorf("window of %d members (down %v): %+v", tt.members, tt.down, w)
		}
	}
}

// TestOnNodeNamesTheNodesDirectories: on the member's own node the steps
// name its data directory and its --wal-dir as its manifest says; else
// kubeadm's and a reminder of --wal-dir.
func TestOnNodeNamesTheNodesDirectories(t *testing.T) {
	list := []*pb.Member{{ID: 1, Name: "m0", PeerURLs: []string{"http://10.0.0.1:2380"}}, {ID: 2, Name: "m1", PeerURLs: []string{"http://10.0.0.2:2380"}}}
	far := strings.Join(onNode("m1", []string{"http://10.0.0.2:2380"}, list, nil, 500<<20), "\n")
	here := strings.Join(onNode("m1", []string{"http://10.0.0.2:2380"}, list, &localEtcd{DataDir: "/data/etcd", WalDir: "/wal/etcd", Source: "kubeadm static pod"}, 0), "\n")
	for _, want := range []string{"mv /var/lib/etcd /var/lib/etcd.wrong-m1", "--wal-dir likewise", "500 MiB free", "--initial-cluster=m0=http://10.0.0.1:2380,m1=http://10.0.0.2:2380"} {
		if !strings.Contains(far, want) {
			t.Errorf("the steps elsewhere miss %q:\n%s", want, far)
		}
	}
	for _, want := range []string{"mv /data/etcd /data/etcd.wrong-m1", "mv /wal/etcd /wal/etcd.wrong-m1", "--data-dir /data/etcd"} {
		if !strings.Contains(here, want) {
			t.Errorf("the steps on the node miss %q:\n%s", want, here)
		}
	}
}

// TestReplaceRefusesADistribution: k3s's and rke2's own keys (no leading
// slash), or OpenShift's, in the keyspace: the member list is theirs to
// change, so replace refuses, dry run included, naming their procedure;
// members still compares.
func TestReplaceRefusesADistribution(t *testing.T) {
	c := startCluster(t, 3)
	ctx := context.Background()
	etcdtest.Put(t, c.cli, "/registry/configmaps/default/a", configMap(t, "a", "x"))
	w := c.follower(t)
	c.edit(t, w, addKey("/registry/configmaps/default/ghost", configMap(t, "ghost", "x")))
	t.Setenv(etcdwrite.LockDirEnv, t.TempDir())
	for _, tt := range []struct{ key, name, procedure string }{
		{"k3s/apiaddresses", "k3s", "kubectl delete node"},
		{"rke2/etcd/learnerProgress", "rke2", "rke2-server"},
		{"/registry/config.openshift.io/clusterversions/version", "OpenShift", "Replacing an unhealthy etcd member"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			etcdtest.Put(t, c.cli, tt.key, "x")
			defer func() {
				if _, err := c.cli.Delete(ctx, tt.key); err != nil {
					t.Fatal(err)
				}
			}()
			root := t.TempDir()
			for _, confirm := range []bool{false, true} {
				ro := ReplaceOptions{Compare: c.options(), Member: c.names[w], EvidenceRoot: root, Confirm: confirm, Wait: time.Second}
				res, err := Replace(ctx, ro)
				if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "this is "+tt.name) || !strings.Contains(err.Error(), tt.procedure) {
					t.Errorf("replace (confirm %v) beside %s: %v", confirm, tt.key, err)
				}
				if res == nil || res.Before == nil || len(res.Before.Verdict.Wrong) != 1 {
					t.Errorf("the comparison is not shown: %+v", res)
				}
			}
			list, err := c.cli.MemberList(ctx)
			if err != nil || len(list.Members) != 3 {
				t.Errorf("the member list changed: %v, %v", list, err)
			}
		})
	}
}

// TestReplaceStoppedInTheWait: a run stopped (SIGINT) while the learner
// has not started leaves it a learner and says to run again (exit 3), as
// the end of --wait does: the time of the snapshots is not the wait's.
func TestReplaceStoppedInTheWait(t *testing.T) {
	c := startCluster(t, 3)
	for i := range 5 {
		etcdtest.Put(t, c.cli, fmt.Sprintf("/registry/configmaps/default/cm-%d", i), configMap(t, "a", "x"))
	}
	w := c.follower(t)
	c.edit(t, w, dropKey("/registry/configmaps/default/cm-2"))
	t.Setenv(etcdwrite.LockDirEnv, t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	o := c.options()
	o.Notices = func(n notice.Notice) {
		s := n.Text
		if strings.Contains(s, "is a learner") {
			time.AfterFunc(500*time.Millisecond, cancel)
		}
	}
	res, err := Replace(ctx, ReplaceOptions{Compare: o, Member: c.names[w], EvidenceRoot: t.TempDir(), Confirm: true, Wait: time.Hour, Poll: 100 * time.Millisecond})
	if !errors.Is(err, ErrLearnerWaiting) || res.Stage != StageWaiting || !strings.Contains(err.Error(), "run `regghost members replace "+c.names[w]+" --confirm` again") {
		t.Fatalf("a run stopped in the wait: %v (%+v)", err, res)
	}
}

// TestDiskBudgetOnARealMount: with a tmpfs mounted on the member's data
// directory (root only; skipped elsewhere), the data directory is measured
// on its own filesystem, which cannot keep its reserve for the learner's
// copy: refused before anything is written, and the node steps move what
// the mount holds, never the mount point. The data directory beside the
// evidence on one filesystem is one budget; another member's node counts
// the evidence alone.
func TestDiskBudgetOnARealMount(t *testing.T) {
	base := t.TempDir()
	mnt := filepath.Join(base, "etcd")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=64m"); err != nil {
		t.Skipf("cannot mount a tmpfs here (needs root): %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(mnt, 0) })
	before := &Report{Members: []Member{
		{Member: etcdmembers.Member{Name: "m0", Leader: true, DBSize: 8 << 20, Endpoint: "http://10.0.0.1:2379"}},
		{Member: etcdmembers.Member{Name: "m1", DBSize: 8 << 20, Endpoint: "http://10.0.0.2:2379"}},
	}}
	evidence := filepath.Join(base, "backups")
	for _, tt := range []struct {
		name    string
		node    *nodeconfig.EtcdMember
		budgets int
		want    string
	}{
		{"a full mount on its node", &nodeconfig.EtcdMember{Name: "m1", DataDir: mnt}, 2, "the filesystem of " + mnt + " "},
		{"room on its node, beside the evidence", &nodeconfig.EtcdMember{Name: "m1", DataDir: filepath.Join(base, "data")}, 1, ""},
		{"another member's node", &nodeconfig.EtcdMember{Name: "m2", DataDir: mnt}, 1, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := &replaceRun{o: ReplaceOptions{Member: "m1", Node: tt.node, EvidenceRoot: evidence}}
			p := &replacePlan{res: &Replacement{}}
			err := r.diskBudget(p, before)
			if (tt.want == "") != (err == nil) || (err != nil && (!errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tt.want))) {
				t.Errorf("diskBudget: %v, want %q", err, tt.want)
			}
			if len(p.res.Disk) != tt.budgets {
				t.Errorf("%d filesystems in the budget, want %d: %+v", len(p.res.Disk), tt.budgets, p.res.Disk)
			}
			if _, err := os.Stat(evidence); err == nil {
				t.Errorf("the budget wrote %s", evidence)
			}
		})
	}
	local := (&replaceRun{o: ReplaceOptions{Member: "m1", Node: &nodeconfig.EtcdMember{Name: "m1", DataDir: mnt, Source: "kubeadm"}}}).localNode()
	steps := strings.Join(onNode("m1", []string{"http://10.0.0.2:2380"}, nil, local, 0), "\n")
	if !local.DataMount || !strings.Contains(steps, "mv "+mnt+"/member "+mnt+"/member.wrong-m1") || strings.Contains(steps, "mv "+mnt+" ") {
		t.Errorf("the steps on a mounted data directory:\n%s", steps)
	}
}

// TestRecordedFallbackOnlyOnTheMembersNode: the recorded client URLs are a
// way to the cluster from the member's own node only; a record of a member
// of that name that ran elsewhere (a backup directory shared by several
// clusters' nodes) is never followed, nor sent the credentials.
func TestRecordedFallbackOnlyOnTheMembersNode(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "20261205T000000Z-members-replace-m1")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		peer string
		want bool
	}{{"https://127.0.0.1:2380", true}, {"https://192.0.2.77:2380", false}} {
		rec := replaceRecord{Stage: recordRemoving, Cluster: "c1", Member: "m1", ID: "a1", PeerURLs: []string{tt.peer}, Others: []string{"https://192.0.2.10:2379"}}
		if err := writeRecord(dir, rec, time.Now()); err != nil {
			t.Fatal(err)
		}
		if got := RecordedFallback(root, "m1"); (got != nil) != tt.want {
			t.Errorf("a record of m1 at %s: fallback %+v, want %v", tt.peer, got, tt.want)
		}
	}
}

// TestReplaceStoppedAfterTheRemoval: a stop (Ctrl-C) while the member is
// being removed lets the removal finish and stops before the add: the run
// ends ErrStoppedMidway (exit 3: not done yet), and the next run takes it
// up, adding the member back.
func TestReplaceStoppedAfterTheRemoval(t *testing.T) {
	c := startCluster(t, 3)
	for i := range 5 {
		etcdtest.Put(t, c.cli, fmt.Sprintf("/registry/configmaps/default/cm-%d", i), configMap(t, "a", "x"))
	}
	w := c.follower(t)
	c.edit(t, w, dropKey("/registry/configmaps/default/cm-2"))
	t.Setenv(etcdwrite.LockDirEnv, t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	o := c.options()
	o.Notices = func(n notice.Notice) {
		s := n.Text
		if strings.HasPrefix(s, "removing ") {
			cancel()
		}
	}
	root := t.TempDir()
	res, err := Replace(ctx, ReplaceOptions{Compare: o, Member: c.names[w], EvidenceRoot: root, Confirm: true, Wait: time.Second, Poll: 100 * time.Millisecond})
	if !errors.Is(err, ErrStoppedMidway) || !strings.Contains(err.Error(), "again to take it up") {
		t.Fatalf("a run stopped during the removal: %v (%+v)", err, res)
	}
	// Removed, its etcd is stopped, as the steps on its node say.
	c.Stop(w)
	o.Notices = nil
	plan, err := Replace(context.Background(), ReplaceOptions{Compare: o, Member: c.names[w], EvidenceRoot: root, Wait: time.Second, Poll: 100 * time.Millisecond})
	if err != nil || len(plan.Steps) == 0 || !strings.Contains(plan.Steps[0], "take up the replacement") {
		t.Fatalf("the next run does not take it up: %v (%+v)", err, plan)
	}
}
