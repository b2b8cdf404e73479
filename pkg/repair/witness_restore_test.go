package repair

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/flagnames"
)

const (
	nsKey  = "/registry/namespaces/ns1"
	crdKey = "/registry/apiextensions.k8s.io/customresourcedefinitions/widgets.example.com"
)

// TestRestoreWitnessRule: a key is not written back into a namespace or CRD
// created again since the purge, whether the backup recorded the witness
// absent at the delete or the witness is worked out from the key's path (a
// backup without the record); a witness still absent, or standing as it
// stood at the purge, lets the key back; --into-recreated writes it anyway.
func TestRestoreWitnessRule(t *testing.T) {
	tests := []struct {
		name string
		key  string
		// absent is the backup's record of the witnesses absent at the
		// delete; nil is a backup without the record.
		absent []string
		// before exist when the purge looks; after are created (again)
		// after it.
		before, after []string
		// noPrefix and noRevision make a backup that names neither its
		// registry prefix nor its revision: only the record can judge.
		noPrefix, noRevision bool
		optPrefix            string
		// needs is the backup's record of what the key rested on when it was
		// captured; action is the command whose backup it is; gone are
		// deleted after the capture.
		needs  []string
		action string
		gone   []string
		into   bool
		want   etcdwrite.Outcome
		detail []string
	}{
		{name: "recorded namespace still absent: the undo", key: "/registry/pods/ns1/p", absent: []string{nsKey}, want: etcdwrite.Restored},
		{name: "recorded namespace created again", key: "/registry/pods/ns1/p", absent: []string{nsKey}, after: []string{nsKey}, want: etcdwrite.Refused,
			detail: []string{"namespace ns1 (" + nsKey + ", create revision", "absent when the purge deleted this key) was created again since the purge", flagnames.IntoRecreated}},
		{name: "recorded namespace created again, --into-recreated", key: "/registry/pods/ns1/p", absent: []string{nsKey}, after: []string{nsKey}, into: true, want: etcdwrite.Restored,
			detail: []string{"written into namespace ns1 (create revision", "created again since the purge, as " + flagnames.IntoRecreated}},
		{name: "recorded namespace created again, backup without prefix or revision", key: "/registry/pods/ns1/p", absent: []string{nsKey}, after: []string{nsKey},
			noPrefix: true, noRevision: true, want: etcdwrite.Refused, detail: []string{"absent when the purge deleted this key"}},
		{name: "no record: namespace created after the purge", key: "/registry/pods/ns1/p", after: []string{nsKey}, want: etcdwrite.Refused,
			detail: []string{"namespace ns1 (", "after the purge's revision", "was created again since the purge"}},
		{name: "no record, no prefix in the backup: the command's prefix", key: "/registry/pods/ns1/p", after: []string{nsKey}, noPrefix: true, optPrefix: "/registry/", want: etcdwrite.Refused},
		{name: "no record: namespace live at the purge (stuck-terminating)", key: "/registry/pods/ns1/p", before: []string{nsKey}, want: etcdwrite.Restored},
		{name: "namespace live at the purge, deleted and created again since", key: "/registry/pods/ns1/p", before: []string{nsKey}, after: []string{nsKey}, want: etcdwrite.Refused,
			detail: []string{"namespace ns1 (", "was created again since the purge"}},
		{name: "recorded CRD created again", key: "/registry/example.com/widgets/ns1/w", absent: []string{crdKey}, before: []string{nsKey}, after: []string{crdKey}, want: etcdwrite.Refused,
			detail: []string{"CustomResourceDefinition widgets.example.com (" + crdKey, "would join a CustomResourceDefinition of that name"}},
		{name: "no record: CRD created after the purge", key: "/registry/example.com/widgets/ns1/w", before: []string{nsKey}, after: []string{crdKey}, want: etcdwrite.Refused,
			detail: []string{"CustomResourceDefinition widgets.example.com"}},
		{name: "cluster-scoped custom resource, CRD still absent", key: "/registry/example.com/widgets/w", absent: []string{crdKey}, after: []string{nsKey}, want: etcdwrite.Restored},
		{name: "unstick's backup: the namespace it needs is gone since", key: "/registry/configmaps/ns1/held", action: backup.ActionUnstick, needs: []string{nsKey},
			before: []string{nsKey}, gone: []string{nsKey}, want: etcdwrite.Refused,
			detail: []string{"namespace ns1 existed when the backup was taken and is gone now: written back, the key would be a ghost; it stays in the backup: create it again, then restore with " + flagnames.IntoRecreated}},
		{name: "dangling's backup without the record: the namespace worked out from the path", key: "/registry/rolebindings/ns1/b", action: backup.ActionDangling,
			before: []string{nsKey}, gone: []string{nsKey}, want: etcdwrite.Refused, detail: []string{"namespace ns1 existed when the backup was taken"}},
		{name: "a custom resource whose CRD is gone since", key: "/registry/example.com/widgets/ns1/w", action: backup.ActionUnstick, needs: []string{nsKey, crdKey},
			before: []string{nsKey, crdKey}, gone: []string{crdKey}, want: etcdwrite.Refused, detail: []string{"CustomResourceDefinition widgets.example.com existed"}},
		{name: "the namespace it needs created again: --into-recreated writes it there", key: "/registry/configmaps/ns1/held", action: backup.ActionUnstick, needs: []string{nsKey},
			before: []string{nsKey}, gone: []string{nsKey}, after: []string{nsKey}, into: true, want: etcdwrite.Restored},
		{name: "the namespace it needs created again: refused", key: "/registry/configmaps/ns1/held", action: backup.ActionUnstick, needs: []string{nsKey},
			before: []string{nsKey}, gone: []string{nsKey}, after: []string{nsKey}, want: etcdwrite.Refused,
			detail: []string{"namespace ns1 (" + nsKey + ", create revision", "was created again since the backup", flagnames.IntoRecreated}},
		{name: "unstick's backup: the namespace is still there", key: "/registry/configmaps/ns1/held", action: backup.ActionUnstick, needs: []string{nsKey},
			before: []string{nsKey}, want: etcdwrite.Restored},
		{name: "a built-in dotted group has no CRD witness", key: "/registry/apiregistration.k8s.io/apiservices/v1.example.com",
			after: []string{"/registry/apiextensions.k8s.io/customresourcedefinitions/apiservices.apiregistration.k8s.io"}, want: etcdwrite.Restored},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cli, _ := etcdtest.Start(t)
			ctx := context.Background()
			created := map[string]int64{}
			for _, k := range tt.before {
				created[k] = etcdtest.Put(t, cli, k, "witness at the purge").CreateRevision
			}
			e := backup.EntryOf(etcdtest.Put(t, cli, tt.key, "k8s\x00ghost"))
			e.Absent = tt.absent
			for _, k := range tt.needs {
				e.Needs = append(e.Needs, backup.Present{Key: k, CreateRevision: created[k]})
			}
			b := &backup.Backup{Prefix: "/registry/", ScanRevision: e.ModRevision, Entries: []backup.Entry{e}, Action: tt.action}
			if tt.noPrefix {
				b.Prefix = ""
			}
			if tt.noRevision {
				b.ScanRevision = 0
			}
			// The purge.
			if _, err := cli.Delete(ctx, tt.key); err != nil {
				t.Fatal(err)
			}
			for _, k := range tt.gone {
				if _, err := cli.Delete(ctx, k); err != nil {
					t.Fatal(err)
				}
			}
			for _, k := range tt.after {
				if _, err := cli.Delete(ctx, k); err != nil {
					t.Fatal(err)
				}
				backup.EntryOf(etcdtest.Put(t, cli, k, "created since"))
			}
			o := RestoreOptions{Pacing: etcdwrite.Pacing{PerSecond: 1000}, IntoRecreated: tt.into, Prefix: tt.optPrefix, DryRun: true}
			plan, err := RestoreWith(ctx, cli, b, o)
			if err != nil {
				t.Fatal(err)
			}
			wantPlan := tt.want
			if wantPlan == etcdwrite.Restored {
				wantPlan = etcdwrite.WouldRestore
			}
			if plan[0].Outcome != wantPlan {
				t.Errorf("dry run: %s, want %s (%s)", plan[0].Outcome, wantPlan, plan[0].Detail)
			}
			o.DryRun = false
			res, err := RestoreWith(ctx, cli, b, o)
			if err != nil {
				t.Fatal(err)
			}
			if res[0].Outcome != tt.want {
				t.Errorf("restore: %s, want %s (%s)", res[0].Outcome, tt.want, res[0].Detail)
			}
			for _, d := range tt.detail {
				if !strings.Contains(res[0].Detail, d) || !strings.Contains(plan[0].Detail, d) {
					t.Errorf("detail %q (dry run %q) does not say %q", res[0].Detail, plan[0].Detail, d)
				}
			}
			if strings.Contains(res[0].Detail, "\n") {
				t.Errorf("detail is not one line: %q", res[0].Detail)
			}
			resp, err := cli.Get(ctx, tt.key)
			if err != nil {
				t.Fatal(err)
			}
			if written := len(resp.Kvs) == 1; written != (tt.want == etcdwrite.Restored) {
				t.Errorf("key written: %v, want %v", written, tt.want == etcdwrite.Restored)
			}
		})
	}
}

// TestRestoreWitnessInTheBackup: a namespace key the backup holds itself is
// no resurrection when restore writes it back (before, after or beside the
// keys in it), nor when an earlier restore did (it holds the backed-up
// bytes); the keys in it are compared at the revision it was written at.
func TestRestoreWitnessInTheBackup(t *testing.T) {
	tests := []struct {
		name string
		// podFirst orders the pod before its namespace in the backup.
		podFirst bool
		batch    int
		// nsRestoredEarlier writes the namespace back before the restore.
		nsRestoredEarlier bool
	}{
		{name: "namespace first, one key per transaction", batch: 1},
		{name: "pod first, one key per transaction", batch: 1, podFirst: true},
		{name: "one batch", batch: 2},
		{name: "namespace written back by an earlier restore", batch: 1, nsRestoredEarlier: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cli, _ := etcdtest.Start(t)
			ctx := context.Background()
			ns := backup.EntryOf(etcdtest.Put(t, cli, nsKey, "k8s\x00namespace ns1, terminating"))
			pod := backup.EntryOf(etcdtest.Put(t, cli, "/registry/pods/ns1/p", "k8s\x00pod"))
			entries := []backup.Entry{ns, pod}
			if tt.podFirst {
				entries = []backup.Entry{pod, ns}
			}
			b := &backup.Backup{Prefix: "/registry/", ScanRevision: pod.ModRevision, Entries: entries}
			for _, e := range entries {
				if _, err := cli.Delete(ctx, e.Key); err != nil {
					t.Fatal(err)
				}
			}
			if tt.nsRestoredEarlier {
				backup.EntryOf(etcdtest.Put(t, cli, nsKey, string(ns.Value)))
			}
			res, err := RestoreWith(ctx, cli, b, RestoreOptions{Pacing: etcdwrite.Pacing{BatchSize: tt.batch, PerSecond: 1000}})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range res {
				want := etcdwrite.Restored
				if r.Key == nsKey && tt.nsRestoredEarlier {
					want = etcdwrite.AlreadyPresent
				}
				if r.Outcome != want {
					t.Errorf("%s: %s, want %s (%s)", r.Key, r.Outcome, want, r.Detail)
				}
			}
			// The namespace goes back before the keys in it, whatever the
			// backup's order: a restore that stops between two
			// transactions leaves no key without its namespace.
			nsNow, err := cli.Get(ctx, nsKey)
			if err != nil {
				t.Fatal(err)
			}
			podNow, err := cli.Get(ctx, pod.Key)
			if err != nil {
				t.Fatal(err)
			}
			if len(nsNow.Kvs) != 1 || len(podNow.Kvs) != 1 || nsNow.Kvs[0].ModRevision > podNow.Kvs[0].ModRevision {
				t.Errorf("the namespace was written after the pod in it: %v, %v", nsNow.Kvs, podNow.Kvs)
			}
		})
	}
}

// hookKV runs a hook once, before the first transaction restore commits, and
// another after every commit.
type hookKV struct {
	*clientv3.Client
	once        sync.Once
	before      func()
	afterCommit func()
	// failGet fails reads of these keys once armed.
	failGet map[string]bool
	armed   bool
}

func (h *hookKV) Txn(ctx context.Context) clientv3.Txn {
	return hookTxn{Txn: h.Client.Txn(ctx), h: h}
}

func (h *hookKV) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	if h.armed && h.failGet[key] {
		return nil, errors.New("injected read failure")
	}
	return h.Client.Get(ctx, key, opts...)
}

type hookTxn struct {
	clientv3.Txn
	h *hookKV
}

func (t hookTxn) If(c ...clientv3.Cmp) clientv3.Txn  { return hookTxn{Txn: t.Txn.If(c...), h: t.h} }
func (t hookTxn) Then(o ...clientv3.Op) clientv3.Txn { return hookTxn{Txn: t.Txn.Then(o...), h: t.h} }
func (t hookTxn) Else(o ...clientv3.Op) clientv3.Txn { return hookTxn{Txn: t.Txn.Else(o...), h: t.h} }
func (t hookTxn) Commit() (*clientv3.TxnResponse, error) {
	if t.h.before != nil {
		t.h.once.Do(t.h.before)
	}
	resp, err := t.Txn.Commit()
	if t.h.afterCommit != nil {
		t.h.afterCommit()
	}
	return resp, err
}

// TestRestoreComparesWitnessesAtWriteTime: a namespace created between the
// plan and the write is seen by the write itself: inside the transaction
// on etcd, by the read just before it in kine's one-key shape. The key is
// refused, the other written.
func TestRestoreComparesWitnessesAtWriteTime(t *testing.T) {
	for _, tt := range []struct {
		name   string
		pacing etcdwrite.Pacing
	}{
		{name: "etcd: compared inside the transaction", pacing: etcdwrite.Pacing{BatchSize: 1, PerSecond: 1000}},
		{name: "kine: read just before", pacing: etcdwrite.Pacing{PerSecond: 1000, OneKey: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cli, _ := etcdtest.Start(t)
			ctx := context.Background()
			a := backup.EntryOf(etcdtest.Put(t, cli, "/registry/pods/a/1", "k8s\x00a"))
			a.Absent = []string{"/registry/namespaces/a"}
			b := backup.EntryOf(etcdtest.Put(t, cli, "/registry/pods/b/1", "k8s\x00b"))
			b.Absent = []string{"/registry/namespaces/b"}
			backup := &backup.Backup{Prefix: "/registry/", ScanRevision: b.ModRevision, Entries: []backup.Entry{a, b}}
			if _, err := cli.Delete(ctx, "/registry/pods/", clientv3.WithPrefix()); err != nil {
				t.Fatal(err)
			}
			kv := &hookKV{Client: cli, before: func() { etcdtest.Put(t, cli, "/registry/namespaces/b", "created during the restore") }}
			res, err := RestoreWith(ctx, kv, backup, RestoreOptions{Pacing: tt.pacing})
			if err != nil {
				t.Fatal(err)
			}
			if res[0].Outcome != etcdwrite.Restored {
				t.Errorf("%s: %s (%s)", res[0].Key, res[0].Outcome, res[0].Detail)
			}
			if res[1].Outcome != etcdwrite.Refused || !strings.Contains(res[1].Detail, "namespace b was created again (create revision") || !strings.Contains(res[1].Detail, "during the restore") {
				t.Errorf("%s: %s (%s), want refused: namespace b created during the restore", res[1].Key, res[1].Outcome, res[1].Detail)
			}
			if resp, _ := cli.Get(ctx, "/registry/pods/b/1"); len(resp.Kvs) != 0 {
				t.Error("a key was written into a namespace created during the restore")
			}
		})
	}
}

// TestRestoreVerifiesEveryKey: a read-back that fails marks its key
// unverified and the keys after it are still read back (one deleted right
// after the write is found), on contexts of their own: the command's has
// run out by then. The error comes once every key has an outcome.
func TestRestoreVerifiesEveryKey(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	keys := []string{"/registry/configmaps/x/a", "/registry/configmaps/x/b", "/registry/configmaps/x/c"}
	var entries []backup.Entry
	for _, k := range keys {
		entries = append(entries, backup.EntryOf(etcdtest.Put(t, cli, k, "k8s\x00"+k)))
	}
	if _, err := cli.Delete(context.Background(), "/registry/configmaps/", clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	kv := &hookKV{Client: cli, failGet: map[string]bool{keys[0]: true}}
	kv.afterCommit = func() {
		// Written in one transaction: then someone deletes c, a cannot be
		// read, and the command's context is gone.
		if _, err := cli.Delete(context.Background(), keys[2]); err != nil {
			t.Error(err)
		}
		kv.armed = true
		cancel()
	}
	res, err := RestoreWith(ctx, kv, &backup.Backup{Entries: entries}, RestoreOptions{Pacing: etcdwrite.Pacing{PerSecond: 1000}})
	if err == nil || !strings.Contains(err.Error(), "1 of 3 keys could not be read back") || strings.Contains(err.Error(), "\n") {
		t.Errorf("err = %v, want one line: 1 of 3 keys could not be read back", err)
	}
	want := []etcdwrite.Outcome{etcdwrite.Unverified, etcdwrite.Restored, etcdwrite.StillPresent}
	for i, r := range res {
		if r.Outcome != want[i] {
			t.Errorf("%s: %s, want %s (%s)", r.Key, r.Outcome, want[i], r.Detail)
		}
	}
	if !strings.Contains(res[0].Detail, "injected read failure") {
		t.Errorf("unverified detail %q does not say why", res[0].Detail)
	}
}

// TestReadBackupNeedsItsChecksum: a backup whose header has no checksum is
// invalid, with one line, however intact its entries are.
func TestReadBackupNeedsItsChecksum(t *testing.T) {
	dir := t.TempDir()
	path, _, err := backup.WriteBackup(dir, &backup.Backup{Scope: "namespace x", Entries: []backup.Entry{{Key: "/registry/pods/x/p", Value: []byte("v")}}})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	for name, edit := range map[string]func(string) string{
		"sha256 removed": func(s string) string { return removeLine(s, `"sha256":`) },
		"sha256 emptied": func(s string) string { return replaceLine(s, `"sha256":`, ` "sha256": ""`) },
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), backup.BackupFile)
			if err := os.WriteFile(p, []byte(edit(string(data))), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := backup.ReadBackup(p)
			if !errors.Is(err, backup.ErrCorruptBackup) || !strings.Contains(err.Error(), "no checksum") || strings.Contains(err.Error(), "\n") {
				t.Errorf("err = %v, want one line: corrupt, no checksum", err)
			}
		})
	}
}

// removeLine drops the line of a backup's top level holding field.
func removeLine(s, field string) string { return replaceLine(s, field, "") }

// replaceLine replaces the top-level line holding field (the indented JSON
// WriteBackup writes puts it at one space) with repl, fixing the comma of
// the line before when it was the last.
func replaceLine(s, field, repl string) string {
	lines := strings.Split(s, "\n")
	var out []string
	for i, l := range lines {
		if !strings.HasPrefix(l, " "+field) {
			out = append(out, l)
			continue
		}
		last := i+1 < len(lines) && strings.HasPrefix(lines[i+1], "}")
		switch {
		case repl != "" && !last:
			out = append(out, repl+",")
		case repl != "":
			out = append(out, repl)
		case last:
			out[len(out)-1] = strings.TrimSuffix(out[len(out)-1], ",")
		}
	}
	return strings.Join(out, "\n")
}

// TestRestoreOverARewrittenNamespace: unstick rewrote a namespace (its
// finalizers) and deleted a pod in it; the restore puts the namespace's
// bytes back over the key as regghost left it, and the pod back beside
// it, in separate transactions and whatever the backup's order: the
// namespace's update keeps its create revision, so the pod's compare holds.
func TestRestoreOverARewrittenNamespace(t *testing.T) {
	for _, podFirst := range []bool{false, true} {
		cli, _ := etcdtest.Start(t)
		ctx := context.Background()
		ns := backup.EntryOf(etcdtest.Put(t, cli, nsKey, "k8s\x00namespace ns1, finalizers [example.com/x]"))
		pod := backup.EntryOf(etcdtest.Put(t, cli, "/registry/pods/ns1/p", "k8s\x00pod"))
		rewritten := etcdtest.Put(t, cli, nsKey, "k8s\x00namespace ns1, no finalizers")
		ns.Rewritten = rewritten.ModRevision
		if _, err := cli.Delete(ctx, pod.Key); err != nil {
			t.Fatal(err)
		}
		entries := []backup.Entry{ns, pod}
		if podFirst {
			entries = []backup.Entry{pod, ns}
		}
		b := &backup.Backup{Prefix: "/registry/", ScanRevision: pod.ModRevision, Entries: entries}
		res, err := RestoreWith(ctx, cli, b, RestoreOptions{Pacing: etcdwrite.Pacing{BatchSize: 1, PerSecond: 1000}})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Outcome != etcdwrite.Restored {
				t.Errorf("pod first %v: %s: %s (%s), want restored", podFirst, r.Key, r.Outcome, r.Detail)
			}
		}
	}
}

// TestRestoreBringsTheNamespaceItNeeds: a backup that holds the namespace
// its keys need puts it back with them; the keys are not refused.
func TestRestoreBringsTheNamespaceItNeeds(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	ctx := context.Background()
	ns := backup.EntryOf(etcdtest.Put(t, cli, nsKey, "namespace"))
	cm := backup.EntryOf(etcdtest.Put(t, cli, "/registry/configmaps/ns1/held", "configmap"))
	cm.Needs = []backup.Present{{Key: nsKey, CreateRevision: ns.CreateRevision}}
	b := &backup.Backup{Prefix: "/registry/", Action: backup.ActionUnstick, ScanRevision: cm.ModRevision, Entries: []backup.Entry{ns, cm}}
	if _, err := cli.Delete(ctx, "/registry/", clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	res, err := RestoreWith(ctx, cli, b, RestoreOptions{Pacing: etcdwrite.Pacing{PerSecond: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Outcome != etcdwrite.Restored {
			t.Errorf("%s: %s (%s), want restored", r.Key, r.Outcome, r.Detail)
		}
	}
}

// TestRestoreRefusesANamespaceCreatedAgain: a backup that holds the
// namespace its keys need (unstick's: the namespace held its own
// finalizer), taken before that namespace finished deleting; the name was
// created again since (GitOps), another instance at another create
// revision. The keys that needed the old one are refused, whatever the
// backup's scan revision says, and nothing is written.
func TestRestoreRefusesANamespaceCreatedAgain(t *testing.T) {
	for _, scanned := range []bool{true, false} {
		cli, _ := etcdtest.Start(t)
		ctx := context.Background()
		ns := backup.EntryOf(etcdtest.Put(t, cli, nsKey, "namespace, old tenant"))
		cm := backup.EntryOf(etcdtest.Put(t, cli, "/registry/configmaps/ns1/held", "configmap, old tenant's secret"))
		cm.Needs = []backup.Present{{Key: nsKey, CreateRevision: ns.CreateRevision}}
		b := &backup.Backup{Prefix: "/registry/", Action: backup.ActionUnstick, Entries: []backup.Entry{ns, cm}}
		if scanned {
			b.ScanRevision = cm.ModRevision
		}
		if _, err := cli.Delete(ctx, "/registry/", clientv3.WithPrefix()); err != nil {
			t.Fatal(err)
		}
		etcdtest.Put(t, cli, nsKey, "namespace, new tenant")
		res, err := RestoreWith(ctx, cli, b, RestoreOptions{Pacing: etcdwrite.Pacing{PerSecond: 1000}})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Outcome == etcdwrite.Restored {
				t.Errorf("scan revision recorded %v: %s restored into the namespace created again (%s)", scanned, r.Key, r.Detail)
			}
		}
		if resp, err := cli.Get(ctx, cm.Key); err != nil || len(resp.Kvs) != 0 {
			t.Errorf("scan revision recorded %v: the old tenant's ConfigMap was written: %v %v", scanned, resp, err)
		}
	}
}
