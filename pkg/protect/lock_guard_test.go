package protect

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdwrite"
)

// TestNodeLockStopsAnEtcdLocker: a job that deletes holds this node's lock
// under NOSPACE; the alarm is then disarmed; a second regghost of the same
// node with a job that puts (and could take etcd's lock again) is refused
// while the first holds the node's.
func TestNodeLockStopsAnEtcdLocker(t *testing.T) {
	t.Setenv(etcdwrite.LockDirEnv, t.TempDir())
	cli := cluster(t, "here")
	raiseNoSpace(t, cli)
	ctx := context.Background()
	inFirst := make(chan struct{})
	release := make(chan struct{})
	firstDone := make(chan error, 1)
	go func() {
		_, err := Run(ctx, Job{Client: cli, Holder: "regghost purge A", Prefix: reg, Action: "test", DeletesOnly: true,
			Backup: &Record{Root: t.TempDir(), Scope: "a", Keys: []Want{{Entry: backup.Entry{Key: reg + "configmaps/a/x"}}}},
			Write: func(ctx context.Context, w *Writer) ([]etcdwrite.Result, error) {
				close(inFirst)
				<-release
				return nil, nil
			}})
		firstDone <- err
	}()
	<-inFirst
	// the operator disarms (after compact+defrag)
	disarmNoSpace(t, cli)
	secondWrote := false
	_, err := Run(ctx, Job{Client: cli, Holder: "regghost recover B", Prefix: reg, Action: "test", AuditDir: t.TempDir(),
		Write: func(ctx context.Context, w *Writer) ([]etcdwrite.Result, error) {
			secondWrote = true
			_, err := cli.Put(ctx, reg+"configmaps/a/z", "z")
			return nil, err
		}})
	close(release)
	<-firstDone
	if secondWrote || !errors.Is(err, etcdwrite.ErrLocked) {
		t.Errorf("second writer on the same node: wrote %v, err %v; want it refused by the node lock", secondWrote, err)
	}
}

// TestSourceAgainstUnreadableKubeSystem: a source of kube-system uid-a is
// not written into a cluster whose kube-system cannot be read without
// --other-cluster (the etcd cluster ID alone cannot stand in for the UID).
func TestSourceAgainstUnreadableKubeSystem(t *testing.T) {
	a := cluster(t, "a")
	b := cluster(t, "b")
	sa, _ := a.Status(context.Background(), a.Endpoints()[0])
	// B's kube-system becomes unreadable (here: gone; same path as encrypted without key)
	if _, err := b.Delete(context.Background(), reg+"namespaces/kube-system"); err != nil {
		t.Fatal(err)
	}
	src := backup.Identity{KubeSystemUID: "uid-a", ClusterID: fmt.Sprintf("%x", sa.Header.ClusterId)}
	wrote := false
	_, err := Run(context.Background(), Job{Client: b, Holder: "regghost restore", Prefix: reg, Action: "restore", AuditDir: t.TempDir(),
		Source: &src, SourceKeys: []string{reg + "configmaps/a/x"},
		Write: func(ctx context.Context, w *Writer) ([]etcdwrite.Result, error) { wrote = true; return nil, nil }})
	if wrote || err == nil {
		t.Errorf("a source of kube-system uid-a was written into another cluster without --other-cluster (err=%v)", err)
	}
}

func disarmNoSpace(t *testing.T, cli *clientv3.Client) {
	t.Helper()
	ctx := context.Background()
	members, err := cli.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mc := etcdserverpb.NewMaintenanceClient(cli.ActiveConnection())
	for _, m := range members.Members {
		if _, err := mc.Alarm(ctx, &etcdserverpb.AlarmRequest{Action: etcdserverpb.AlarmRequest_DEACTIVATE, MemberID: m.ID, Alarm: etcdserverpb.AlarmType_NOSPACE}); err != nil {
			t.Fatal(err)
		}
	}
}
