package repair

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apitypes "k8s.io/apimachinery/pkg/types"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdwrite"
)

// TestRestoreJudgesTheConfirmedPlanAgain: the plan the operator confirmed
// says K is a conflict, left alone; K is deleted on purpose before the
// lock; the run stops under the lock instead of writing K back.
func TestRestoreJudgesTheConfirmedPlanAgain(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	ctx := context.Background()
	ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: "kube-system", UID: apitypes.UID("uid-here")}}
	etcdtest.Put(t, cli, "/registry/namespaces/kube-system", etcdtest.Encode(t, ns))
	etcdtest.Put(t, cli, "/registry/namespaces/a", "ns")
	kv := etcdtest.Put(t, cli, "/registry/configmaps/a/k", "old")
	b := &backup.Backup{Prefix: "/registry/", KubeSystemUID: "uid-here", Entries: []backup.Entry{backup.EntryOf(kv)}}
	etcdtest.Put(t, cli, "/registry/configmaps/a/k", "new-live")
	r := &Restorer{Client: cli, Backup: b, Path: "b", AuditDir: t.TempDir(), Options: RestoreOptions{Prefix: "/registry/"}}
	plan, err := r.Plan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan) != 1 || plan[0].Outcome != etcdwrite.Conflict {
		t.Fatalf("plan %v", plan)
	}
	// its owner deletes it on purpose between the prompt and the lock
	if _, err := cli.Delete(ctx, "/registry/configmaps/a/k"); err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(ctx)
	if !errors.Is(err, ErrChanged) || len(res) != 0 {
		t.Fatalf("run: %+v, %v; want it stopped, the plan changed", res, err)
	}
	if got, _ := cli.Get(ctx, "/registry/configmaps/a/k"); len(got.Kvs) != 0 {
		t.Error("restore wrote a key the confirmed plan said it would leave alone")
	}
}

// TestRestoreRefusesAnUnwritableAuditLog: an audit directory that cannot
// be written stops the restore before its first write.
func TestRestoreRefusesAnUnwritableAuditLog(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	ctx := context.Background()
	ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: "kube-system", UID: apitypes.UID("uid-here")}}
	etcdtest.Put(t, cli, "/registry/namespaces/kube-system", etcdtest.Encode(t, ns))
	etcdtest.Put(t, cli, "/registry/namespaces/a", "ns")
	var entries []backup.Entry
	for _, k := range []string{"k1", "k2", "k3"} {
		kv := etcdtest.Put(t, cli, "/registry/configmaps/a/"+k, "v")
		entries = append(entries, backup.EntryOf(kv))
		if _, err := cli.Delete(ctx, "/registry/configmaps/a/"+k); err != nil {
			t.Fatal(err)
		}
	}
	b := &backup.Backup{Prefix: "/registry/", KubeSystemUID: "uid-here", Entries: entries}
	r := &Restorer{Client: cli, Backup: b, Path: "b", AuditDir: "/nonexistent/review", Options: RestoreOptions{Prefix: "/registry/"}}
	res, err := r.Run(ctx)
	n := 0
	for _, x := range res {
		if x.Outcome == etcdwrite.Restored {
			n++
		}
	}
	if err == nil || !strings.Contains(err.Error(), "could not be recorded") {
		t.Errorf("err %v, want the audit log refused", err)
	}
	if n > 0 {
		t.Errorf("%d keys written with no audit log", n)
	}
}
