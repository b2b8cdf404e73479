package members

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdconn"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/notice"
	"github.com/regghost/regghost/pkg/session"
)

// fromEndpoint sets up a comparison as a run with only endpoint given
// does (kubeadm's manifest names the node's own member alone), with the
// record under root to fall back on.
func (c *cluster) fromEndpoint(t *testing.T, endpoint, member, root string) (Options, func()) {
	t.Helper()
	s := &session.Settings{Etcd: etcdconn.Config{Endpoints: []string{endpoint}, DialTimeout: 2 * time.Second, CommandTimeout: time.Minute}, Prefix: "/registry/"}
	o, done, err := Setup(context.Background(), s, Options{Reads: session.ScanReads(), Interval: 200 * time.Millisecond, Timeout: 10 * time.Second,
		Fallback: RecordedFallback(root, member)})
	if err != nil {
		t.Fatalf("setup from %s: %v", endpoint, err)
	}
	return o, done
}

// TestReplaceFromTheWrongMembersNode: the operator stands on the wrong
// member's own node, whose only endpoint is that member. The first run
// removes it through the other members (the lock's lease kept alive
// there) and adds it back as a learner; with the member's etcd stopped,
// and then running as a learner (which serves no member list), the next
// runs reach the cluster through the client URLs the record holds, and
// the way back ends with every member agreeing.
func TestReplaceFromTheWrongMembersNode(t *testing.T) {
	c := startCluster(t, 3)
	ctx := context.Background()
	for i := 0; i < 20; i++ {
		etcdtest.Put(t, c.cli, fmt.Sprintf("/registry/configmaps/default/cm-%d", i), configMap(t, fmt.Sprintf("cm-%d", i), "v1"))
	}
	w := c.follower(t)
	name := c.names[w]
	c.edit(t, w, dropKey("/registry/configmaps/default/cm-3"))
	root := t.TempDir()
	t.Setenv(etcdwrite.LockDirEnv, t.TempDir())

	o, done := c.fromEndpoint(t, c.eps[w], name, root)
	ro := ReplaceOptions{Compare: o, Member: name, EvidenceRoot: root, Confirm: true, Wait: time.Second, Poll: 200 * time.Millisecond}
	res, err := Replace(ctx, ro)
	done()
	if !errors.Is(err, ErrLearnerWaiting) || res.LearnerID == "" {
		t.Fatalf("first run from %s's node: %v (%+v)", name, err, res)
	}
	if res.Window == nil || res.Window.Voters != 2 || res.Window.Tolerates != 0 || !strings.Contains(strings.Join(res.Window.Words, " "), "no further failure") {
		t.Errorf("the window: %+v", res.Window)
	}
	// No regghost lock is left in etcd: its lease was kept alive, and
	// revoked, through the members that stayed.
	if resp, err := c.cli.Get(ctx, etcdwrite.LockPrefix, clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil || resp.Count != 0 {
		t.Errorf("a regghost lock is left in etcd: %v, %v", resp, err)
	}

	// The member's etcd is down (stopped as it applied its own removal,
	// or by the operator): nothing answers at the only endpoint given.
	c.Stop(w)
	o, done = c.fromEndpoint(t, c.eps[w], name, root)
	ro.Compare, ro.Confirm = o, false
	plan, err := Replace(ctx, ro)
	done()
	if err != nil || plan.Stage != StagePlanned || !strings.Contains(strings.Join(plan.Steps, "\n"), "take up the replacement") {
		t.Fatalf("dry run with the member's etcd down: %v (%+v)", err, plan)
	}

	// On the node: the data directory moved aside, etcd started again
	// empty: a learner, the only endpoint given.
	onNode := strings.Join(res.OnNode, "\n")
	initial := onNode[strings.Index(onNode, "--initial-cluster=")+len("--initial-cluster="):]
	initial = initial[:strings.IndexAny(initial, " \n")]
	if err := os.Rename(c.dirs[w], c.dirs[w]+".wrong"); err != nil {
		t.Fatal(err)
	}
	c.Rejoin(t, w, initial)
	c.Ready(t, w)
	o, done = c.fromEndpoint(t, c.eps[w], name, root)
	defer done()
	ro.Compare, ro.Confirm, ro.Wait = o, true, 2*time.Minute
	res, err = Replace(ctx, ro)
	if err != nil || res.Stage != StageReplaced || !res.After.Verdict.Agree {
		t.Fatalf("the second run, from the learner's node: %v (%+v)", err, res)
	}
}

// TestReplaceAMemberThatIsDown: a member that does not answer (a member
// crash-looping on a bad db file) is the first case of the way back:
// named not answering, and replaced when the others answer, agree and
// are a quorum; the evidence is theirs. With another member down too,
// it is refused and nothing changes.
func TestReplaceAMemberThatIsDown(t *testing.T) {
	c := startCluster(t, 3)
	ctx := context.Background()
	for i := 0; i < 10; i++ {
		etcdtest.Put(t, c.cli, fmt.Sprintf("/registry/configmaps/default/cm-%d", i), configMap(t, fmt.Sprintf("cm-%d", i), "v1"))
	}
	w := c.follower(t)
	c.Stop(w)
	root := t.TempDir()
	t.Setenv(etcdwrite.LockDirEnv, t.TempDir())
	o := c.options()
	o.Timeout = 2 * time.Second
	ro := ReplaceOptions{Compare: o, Member: c.names[w], EvidenceRoot: root, Poll: 200 * time.Millisecond, Wait: time.Second}
	plan, err := Replace(ctx, ro)
	if err != nil || plan.Stage != StagePlanned || !strings.Contains(plan.Why, "does not answer") {
		t.Fatalf("dry run of a member that is down: %v (%+v)", err, plan)
	}
	ro.Confirm = true
	res, err := Replace(ctx, ro)
	if !errors.Is(err, ErrLearnerWaiting) || len(res.Evidence) != 2 {
		t.Fatalf("replace a member that is down: %v (%+v)", err, res)
	}
	for _, e := range res.Evidence {
		if e.Member == c.names[w] {
			t.Errorf("evidence of the member that is down: %+v", e)
		}
	}
	// backup ls lists the evidence, and prune keeps it while the
	// replacement is under way.
	list, err := backup.ListBackups(root)
	if err != nil || len(list) != 1 || list[0].Path != res.Dir || list[0].Status != backup.BackupUnfinished ||
		!strings.Contains(list[0].Detail, "still under way") || list[0].SnapshotRevision == 0 {
		t.Errorf("backup ls of the evidence: %+v, %v", list, err)
	}
	if len(res.Disk) != 1 || !res.Disk[0].Fits || len(res.Disk[0].Writes) != 1 || res.Disk[0].Written == 0 {
		t.Errorf("the disk budget: %+v", res.Disk)
	}
}

// TestReplaceADownMemberThatAnswersAgain: a member judged down before the
// snapshots that answers again before the removal (a crash loop's
// restart) was never compared: the check right before the removal refuses,
// and it is still a member.
func TestReplaceADownMemberThatAnswersAgain(t *testing.T) {
	c := startCluster(t, 3)
	ctx := context.Background()
	for i := 0; i < 10; i++ {
		etcdtest.Put(t, c.cli, fmt.Sprintf("/registry/configmaps/default/cm-%d", i), configMap(t, fmt.Sprintf("cm-%d", i), "v1"))
	}
	w := c.follower(t)
	c.Stop(w)
	t.Setenv(etcdwrite.LockDirEnv, t.TempDir())
	o := c.options()
	o.Timeout = 2 * time.Second
	back := false
	o.Notices = func(n notice.Notice) {
		step := n.Text
		if strings.HasPrefix(step, "saving ") && !back {
			back = true
			c.Launch(t, w)
			c.Ready(t, w)
		}
	}
	ro := ReplaceOptions{Compare: o, Member: c.names[w], EvidenceRoot: t.TempDir(), Poll: 200 * time.Millisecond, Wait: time.Second, Confirm: true}
	res, err := Replace(ctx, ro)
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "answers again since it was judged down") {
		t.Fatalf("a member down, back before the removal: %v (%+v)", err, res)
	}
	list, lerr := c.cli.MemberList(ctx)
	if lerr != nil || findByName(list.Members, c.names[w]) == nil {
		t.Fatalf("%s was removed: %v", c.names[w], lerr)
	}
}
