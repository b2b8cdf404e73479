package protect

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apitypes "k8s.io/apimachinery/pkg/types"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/notice"
)

const reg = "/registry/"

// cluster starts an etcd holding a kube-system namespace of uid and a
// ConfigMap to change.
func cluster(t *testing.T, uid string) *clientv3.Client {
	t.Helper()
	cli, _ := etcdtest.Start(t)
	ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: "kube-system", UID: apitypes.UID("uid-" + uid)}}
	if _, err := cli.Put(context.Background(), reg+"namespaces/kube-system", etcdtest.Encode(t, ns)); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(context.Background(), reg+"configmaps/a/x", "x"); err != nil {
		t.Fatal(err)
	}
	return cli
}

// deleteX is a job's write: delete configmaps/a/x.
func deleteX(cli *clientv3.Client) func(ctx context.Context, w *Writer) ([]etcdwrite.Result, error) {
	return func(ctx context.Context, w *Writer) ([]etcdwrite.Result, error) {
		if _, err := cli.Delete(ctx, reg+"configmaps/a/x"); err != nil {
			return nil, err
		}
		return []etcdwrite.Result{{Key: reg + "configmaps/a/x", Outcome: etcdwrite.Deleted}}, nil
	}
}

// TestRunRefusals: every guard of the protected write refuses before
// anything is written, and leaves no backup directory behind.
func TestRunRefusals(t *testing.T) {
	tests := []struct {
		name string
		// job changes the job of a cluster with kube-system uid-here.
		job  func(t *testing.T, cli *clientv3.Client, j *Job)
		want string
		is   error
	}{
		{name: "a backup of another cluster", is: backup.ErrOtherCluster, want: "kube-system uid uid-there",
			job: func(t *testing.T, cli *clientv3.Client, j *Job) {
				j.Source = &backup.Identity{KubeSystemUID: "uid-there"}
			}},
		{name: "a source whose cluster cannot be told", is: backup.ErrUnknownCluster,
			job: func(t *testing.T, cli *clientv3.Client, j *Job) {
				j.Source = &backup.Identity{Unknown: "no kube-system namespace is stored"}
			}},
		{name: "another cluster's grant, migration accepted", is: backup.ErrOtherCluster, want: OtherClusterGrantsFlag,
			job: func(t *testing.T, cli *clientv3.Client, j *Job) {
				j.Source = &backup.Identity{KubeSystemUID: "uid-there"}
				j.OtherCluster = true
				j.SourceKeys = []string{reg + "configmaps/a/x", reg + "clusterrolebindings/admin"}
			}},
		{name: "another writer holds the lock", is: etcdwrite.ErrLocked,
			job: func(t *testing.T, cli *clientv3.Client, j *Job) {
				unlock, err := etcdwrite.Lock(context.Background(), cli, "regghost purge namespace other")
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(unlock)
			}},
		{name: "the lock cannot be taken", is: etcdwrite.ErrNoLock,
			job: func(t *testing.T, cli *clientv3.Client, j *Job) {
				// An etcd user that may write the registry but not the lock.
				op := registryOnlyUser(t, cli)
				j.Client, j.Write = op, deleteX(op)
			}},
		{name: "a write that puts, under etcd's NOSPACE alarm", is: etcdwrite.ErrNoSpace, want: "regghost space reclaim",
			job: func(t *testing.T, cli *clientv3.Client, j *Job) {
				raiseNoSpace(t, cli)
			}},
		{name: "another regghost holds this node's lock, under NOSPACE", is: etcdwrite.ErrLocked, want: "regghost purge namespace other",
			job: func(t *testing.T, cli *clientv3.Client, j *Job) {
				t.Setenv(etcdwrite.LockDirEnv, t.TempDir())
				raiseNoSpace(t, cli)
				j.DeletesOnly = true
				st, err := cli.Status(context.Background(), cli.Endpoints()[0])
				if err != nil {
					t.Fatal(err)
				}
				unlock, _, err := etcdwrite.NodeLock(fmt.Sprintf("%x", st.Header.ClusterId), "regghost purge namespace other")
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(unlock)
			}},
		{name: "another regghost of this node holds its lock", is: etcdwrite.ErrLocked, want: "this node's lock",
			job: func(t *testing.T, cli *clientv3.Client, j *Job) {
				t.Setenv(etcdwrite.LockDirEnv, t.TempDir())
				st, err := cli.Status(context.Background(), cli.Endpoints()[0])
				if err != nil {
					t.Fatal(err)
				}
				unlock, _, err := etcdwrite.NodeLock(fmt.Sprintf("%x", st.Header.ClusterId), "regghost purge namespace other")
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(unlock)
			}},
		{name: "another regghost holds etcd's lock, under NOSPACE", is: etcdwrite.ErrLocked, want: "regghost purge namespace other",
			job: func(t *testing.T, cli *clientv3.Client, j *Job) {
				t.Setenv(etcdwrite.LockDirEnv, t.TempDir())
				unlock, err := etcdwrite.Lock(context.Background(), cli, "regghost purge namespace other")
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(unlock)
				raiseNoSpace(t, cli)
				j.DeletesOnly = true
			}},
		{name: "a verdict changed under the lock", want: "changed since the plan",
			job: func(t *testing.T, cli *clientv3.Client, j *Job) {
				j.Rejudge = func(context.Context) error { return errors.New("configmaps/a/x changed since the plan") }
			}},
		{name: "every key changed since the plan", want: "every planned key changed",
			job: func(t *testing.T, cli *clientv3.Client, j *Job) {
				j.Backup.Keys[0].ModRevision = 1
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cli := cluster(t, "here")
			root := t.TempDir()
			j := Job{Client: cli, Holder: "regghost test", Prefix: reg, Action: "test", Write: deleteX(cli),
				Backup: &Record{Root: root, Scope: "test", Keys: []Want{{Entry: backup.Entry{Key: reg + "configmaps/a/x"}}}}}
			tt.job(t, cli, &j)
			out, err := Run(context.Background(), j)
			if err == nil || out != nil || !errors.Is(err, ErrNothingChanged) {
				t.Fatalf("Run: %+v, %v; want a refusal before any write", out, err)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v, want %v", err, tt.is)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.HasSuffix(err.Error(), "nothing was changed") {
				t.Errorf("error %q, want it to say %q and that nothing was changed", err, tt.want)
			}
			if resp, err := j.Client.Get(context.Background(), reg+"configmaps/a/x"); err != nil || len(resp.Kvs) != 1 {
				t.Error("the key was deleted")
			}
			if left, _ := os.ReadDir(root); len(left) != 0 {
				t.Errorf("backup root holds %d entries after a refusal", len(left))
			}
		})
	}
}

// TestRunRecordsThenWrites: the backup is on disk, verified, with the
// cluster's identity and the key at its revision, before the write runs;
// the write's outcomes reach the audit log once.
func TestRunRecordsThenWrites(t *testing.T) {
	cli := cluster(t, "here")
	root := t.TempDir()
	var seen *backup.Backup
	out, err := Run(context.Background(), Job{Client: cli, Holder: "regghost test", Prefix: reg, Action: "test",
		Source: &backup.Identity{KubeSystemUID: "uid-here"},
		Backup: &Record{Root: root, Scope: "test", Keys: []Want{{Entry: backup.Entry{Key: reg + "configmaps/a/x"}}, {Entry: backup.Entry{Key: reg + "configmaps/a/gone"}}}},
		Write: func(ctx context.Context, w *Writer) ([]etcdwrite.Result, error) {
			b, err := backup.ReadBackup(w.Dir)
			if err != nil {
				t.Fatalf("the backup is not on disk before the write: %v", err)
			}
			seen = b
			r, err := deleteX(cli)(ctx, w)
			w.Journal(r...)
			return r, err
		}})
	if err != nil {
		t.Fatal(err)
	}
	if seen.KubeSystemUID != "uid-here" || seen.ClusterID == "" || len(seen.Entries) != 1 || string(seen.Entries[0].Value) != "x" || seen.Entries[0].ModRevision == 0 {
		t.Errorf("backup %+v", seen)
	}
	if len(out.Results) != 2 || out.Results[0].Outcome != etcdwrite.SkippedGone || out.Results[1].Outcome != etcdwrite.Deleted {
		t.Errorf("results %+v", out.Results)
	}
	data, err := os.ReadFile(filepath.Join(out.Dir, backup.AuditFile))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), `"outcome":"deleted"`); n != 1 {
		t.Errorf("audit log holds the delete %d times:\n%s", n, data)
	}
}

// registryOnlyUser turns etcd auth on and returns a client of a user that
// may read and write the registry and nothing else.
func registryOnlyUser(t *testing.T, cli *clientv3.Client) *clientv3.Client {
	t.Helper()
	ctx := context.Background()
	steps := []func() error{
		func() error { _, err := cli.UserAdd(ctx, "root", "rootpw"); return err },
		func() error { _, err := cli.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := cli.RoleAdd(ctx, "registry"); return err },
		func() error {
			_, err := cli.RoleGrantPermission(ctx, "registry", reg, clientv3.GetPrefixRangeEnd(reg), clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		},
		func() error { _, err := cli.UserAdd(ctx, "op", "oppw"); return err },
		func() error { _, err := cli.UserGrantRole(ctx, "op", "registry"); return err },
		func() error { _, err := cli.AuthEnable(ctx); return err },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	op, err := clientv3.New(clientv3.Config{Endpoints: cli.Endpoints(), Username: "op", Password: "oppw", Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { op.Close() })
	return op
}

// TestJournalFailureStopsTheWrites: once an outcome cannot be appended to
// the audit log, the writes stop before the next transaction (a write that
// cannot be recorded could not be undone), and Run returns why.
func TestJournalFailureStopsTheWrites(t *testing.T) {
	cli := cluster(t, "here")
	if _, err := cli.Put(context.Background(), reg+"configmaps/a/y", "y"); err != nil {
		t.Fatal(err)
	}
	var written []string
	_, err := Run(context.Background(), Job{Client: cli, Holder: "regghost test", Prefix: reg, Action: "test",
		Backup: &Record{Root: t.TempDir(), Scope: "test", Keys: []Want{{Entry: backup.Entry{Key: reg + "configmaps/a/x"}}, {Entry: backup.Entry{Key: reg + "configmaps/a/y"}}}},
		Write: func(ctx context.Context, w *Writer) ([]etcdwrite.Result, error) {
			// The audit log becomes unwritable (a directory in its place)
			// before the first outcome is journaled.
			if err := os.Remove(filepath.Join(w.Dir, backup.AuditFile)); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			if err := os.Mkdir(filepath.Join(w.Dir, backup.AuditFile), 0o700); err != nil {
				t.Fatal(err)
			}
			var results []etcdwrite.Result
			for _, k := range []string{"x", "y"} {
				select {
				case <-w.Pacing.Stop:
					return results, nil
				default:
				}
				if _, err := cli.Delete(ctx, reg+"configmaps/a/"+k); err != nil {
					return results, err
				}
				written = append(written, k)
				r := etcdwrite.Result{Key: reg + "configmaps/a/" + k, Outcome: etcdwrite.Deleted}
				w.Journal(r)
				results = append(results, r)
			}
			return results, nil
		}})
	if err == nil || !strings.Contains(err.Error(), "could no longer be recorded") {
		t.Fatalf("err %v, want the journal's failure", err)
	}
	if len(written) != 1 {
		t.Fatalf("written %v: the writes went on after the audit log failed", written)
	}
	if got, _ := cli.Get(context.Background(), reg+"configmaps/a/y"); len(got.Kvs) != 1 {
		t.Error("configmaps/a/y was deleted after the journal failed")
	}
}

// raiseNoSpace raises etcd's NOSPACE alarm on every member, as a full
// database does (the Alarm RPC activates it as etcd's quota check would).
func raiseNoSpace(t *testing.T, cli *clientv3.Client) {
	t.Helper()
	ctx := context.Background()
	members, err := cli.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mc := etcdserverpb.NewMaintenanceClient(cli.ActiveConnection())
	for _, m := range members.Members {
		if _, err := mc.Alarm(ctx, &etcdserverpb.AlarmRequest{Action: etcdserverpb.AlarmRequest_ACTIVATE, MemberID: m.ID, Alarm: etcdserverpb.AlarmType_NOSPACE}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cli.Put(ctx, reg+"configmaps/a/probe", "p"); !etcdwrite.IsNoSpace(err) {
		t.Fatalf("a put under the alarm: %v, want it refused", err)
	}
}

// TestDeletesUnderNoSpace: under etcd's NOSPACE alarm a job that only
// deletes runs on this node's lock, with the verified backup first, and
// says that the alarm is still raised and what frees the space.
func TestDeletesUnderNoSpace(t *testing.T) {
	t.Setenv(etcdwrite.LockDirEnv, t.TempDir())
	cli := cluster(t, "here")
	raiseNoSpace(t, cli)
	var notices []notice.Notice
	out, err := Run(context.Background(), Job{Client: cli, Holder: "regghost test", Prefix: reg, Action: "test", DeletesOnly: true, Notices: notice.Collect(&notices),
		Backup: &Record{Root: t.TempDir(), Scope: "test", Keys: []Want{{Entry: backup.Entry{Key: reg + "configmaps/a/x"}}}},
		Write: func(ctx context.Context, w *Writer) ([]etcdwrite.Result, error) {
			if _, err := backup.ReadBackup(w.Dir); err != nil {
				t.Fatalf("the backup is not on disk before the write: %v", err)
			}
			return deleteX(cli)(ctx, w)
		}})
	if err != nil {
		t.Fatal(err)
	}
	if resp, _ := cli.Get(context.Background(), reg+"configmaps/a/x"); len(resp.Kvs) != 0 {
		t.Error("the key was not deleted")
	}
	said := strings.Join(out.Warnings, "\n")
	for _, want := range []string{"this node's lock", "not one on another node", "still raised", "regghost space reclaim"} {
		if !strings.Contains(said, want) || !strings.Contains(strings.Join(notice.Texts(notices), "\n"), "warning: ") || !strings.Contains(strings.Join(notice.Texts(notices), "\n"), want) {
			t.Errorf("warnings %q (notices %q) do not say %q", said, notice.Texts(notices), want)
		}
	}
}

// TestLostLockStopsTheWrites: when the etcd lock's lease ends while the
// job writes (etcd unreachable or regghost paused past its TTL, and a
// second writer may take it), the writes stop before the next transaction
// and Run says why.
func TestLostLockStopsTheWrites(t *testing.T) {
	t.Setenv(etcdwrite.LockDirEnv, t.TempDir())
	cli := cluster(t, "here")
	_, err := Run(context.Background(), Job{Client: cli, Holder: "regghost test", Prefix: reg, Action: "test",
		Backup: &Record{Root: t.TempDir(), Scope: "test", Keys: []Want{{Entry: backup.Entry{Key: reg + "configmaps/a/x"}}}},
		Write: func(ctx context.Context, w *Writer) ([]etcdwrite.Result, error) {
			owner, err := cli.Get(ctx, etcdwrite.LockPrefix+"/", clientv3.WithPrefix())
			if err != nil || len(owner.Kvs) == 0 {
				t.Fatalf("no lock owner key: %v", err)
			}
			if _, err := cli.Revoke(ctx, clientv3.LeaseID(owner.Kvs[0].Lease)); err != nil {
				t.Fatal(err)
			}
			select {
			case <-w.Pacing.Stop:
				return nil, nil
			case <-time.After(time.Minute):
				t.Fatal("the writes were not stopped when the lock's lease ended")
				return nil, nil
			}
		}})
	if err == nil || !strings.Contains(err.Error(), "lock was lost") {
		t.Fatalf("err %v, want the lost lock", err)
	}
}
