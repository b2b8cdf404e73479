package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/snapshot"
)

// TestUnstickATargetThatExistsNowhere: a namespace or CRD of which nothing
// is in etcd (a typo) is an error naming what was looked for and the
// closest names that exist, never "nothing to do" with exit 0.
func TestUnstickATargetThatExistsNowhere(t *testing.T) {
	_, ep, _ := goldenSnapshot(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"namespace", "shpo"}, "namespace shpo: nothing of that name is in etcd, nor so in the API server (a deletion that finished leaves nothing either); did you mean shop?"},
		{[]string{"ns/nosuch"}, "namespace nosuch: nothing of that name is in etcd"},
		{[]string{"crd", "gizmos.example.com"}, "customresourcedefinition gizmos.example.com: nothing of that name is in etcd"},
	} {
		var out, errOut bytes.Buffer
		code := Run(append(append([]string{"unstick"}, tc.args...), "--endpoints", ep, "--no-api"), strings.NewReader(""), &out, &errOut)
		msg := etcdtest.WithoutUsing(errOut.String())
		if code != ExitError || !strings.Contains(msg, tc.want) || strings.Contains(out.String(), "nothing to do") {
			t.Errorf("unstick %v: exit %d\n%s%s", tc.args, code, msg, out.String())
		}
	}
}

// TestNamespaceThatExistsNowhere: scan, purge and dangling given -n of a
// namespace of which etcd holds nothing (no key, no object, nothing
// referring into it) fail naming the closest namespaces, where they ended
// on "nothing found", exit 0.
func TestNamespaceThatExistsNowhere(t *testing.T) {
	_, ep, _ := goldenSnapshot(t)
	for _, cmd := range [][]string{{"scan"}, {"purge"}, {"dangling"}} {
		var out, errOut bytes.Buffer
		code := Run(append(cmd, "-n", "shpo", "--endpoints", ep, "--no-api"), strings.NewReader(""), &out, &errOut)
		msg := etcdtest.WithoutUsing(errOut.String())
		if code != ExitError || !strings.Contains(msg, "namespace shpo: nothing of it is in etcd") || !strings.Contains(msg, "did you mean shop?") {
			t.Errorf("%s -n shpo: exit %d\n%s%s", cmd[0], code, msg, out.String())
		}
	}
	// A namespace regghost purged (a backup named after it) existed: nothing
	// of it left is no typo, exit 0, with where it went.
	root := t.TempDir()
	for dir, scope := range map[string]string{"20261206T000000Z-namespace-shpo": "namespace shpo", "20261206T000001Z-namespace-shpo-2": "namespace shpo-2"} {
		if err := os.Mkdir(filepath.Join(root, dir), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, dir, "backup.json"), []byte(`{"scope":"`+scope+`"}`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("REGGHOST_BACKUP_DIR", root)
	for _, cmd := range [][]string{{"scan"}, {"purge"}} {
		var out, errOut bytes.Buffer
		code := Run(append(cmd, "-n", "shpo", "--endpoints", ep, "--no-api"), strings.NewReader(""), &out, &errOut)
		if code != ExitOK || !strings.Contains(strings.Join(strings.Fields(errOut.String()), " "), "nothing of namespace shpo is in etcd; regghost's backup "+filepath.Join(root, "20261206T000000Z-namespace-shpo")) {
			t.Errorf("%s -n shpo after a purge of it: exit %d\n%s%s", cmd[0], code, errOut.String(), out.String())
		}
	}
	// A namespace force-deleted whose objects remain is what scan is for.
	var out, errOut bytes.Buffer
	if code := Run([]string{"scan", "-n", "kb-system", "--endpoints", ep, "--no-api"}, strings.NewReader(""), &out, &errOut); code != ExitGhosts {
		t.Errorf("scan -n kb-system: exit %d\n%s%s", code, errOut.String(), out.String())
	}
}

// TestUnstickWithoutTheAPIServer: with a kubeconfig whose API server does
// not answer, unstick's dry run says so first, offers no --confirm (it
// would be refused) and exits 1.
func TestUnstickWithoutTheAPIServer(t *testing.T) {
	_, ep, _ := goldenSnapshot(t)
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\nusers: [{name: u, user: {}}]\ncontexts: [{name: ctx, context: {cluster: c, user: u}}]\ncurrent-context: ctx\n"
	if err := os.WriteFile(kc, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := Run([]string{"unstick", "namespace", "shop", "--endpoints", ep, "--kubeconfig", kc, "--dial-timeout", "200ms"}, strings.NewReader(""), &out, &errOut)
	first, _, _ := strings.Cut(strings.TrimSpace(out.String()), "\n")
	if code != ExitError || !strings.HasPrefix(first, "The API server was not reached") || strings.Contains(out.String(), "--confirm") ||
		!strings.Contains(errOut.String(), "refused: unstick works through the API server, which was not reached") {
		t.Errorf("exit %d\n%s%s", code, errOut.String(), out.String())
	}
}

// TestWritesThroughTheAPIServerRefusedWithoutIt: dangling --confirm,
// unstick --confirm and purge --confirm --retain-volumes write through the
// API server; without one (not reached, or --no-api) they are refused
// after the plan, before the question, exit 1, and nothing is written.
// (unstick's analysis refuses first; its client's refusal is the last
// guard.)
func TestWritesThroughTheAPIServerRefusedWithoutIt(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		put  map[string]string
		want string
		// plant writes more keys.
		plant func(*testing.T, *clientv3.Client)
	}{
		{"dangling", []string{"dangling", "--confirm", "--accept-single-witness"}, map[string]string{"/registry/apiregistration.k8s.io/apiservices/v1beta1.metrics.example.com": `{"apiVersion":"apiregistration.k8s.io/v1","kind":"APIService","metadata":{"name":"v1beta1.metrics.example.com","uid":"a1"},` +
			`"spec":{"group":"metrics.example.com","version":"v1beta1","service":{"namespace":"gone","name":"metrics"},"groupPriorityMinimum":100,"versionPriority":100}}`},
			"refused: fixes go through the API server (", nil},
		{"unstick", []string{"unstick", "namespace", "shop", "--confirm"}, map[string]string{"/registry/namespaces/shop": `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"shop","uid":"n1","deletionTimestamp":"2026-01-01T00:00:00Z"},"spec":{"finalizers":["kubernetes"]},"status":{"phase":"Terminating"}}`,
			"/registry/configmaps/shop/c1": `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c1","namespace":"shop","uid":"c1","finalizers":["example.com/hold"],"deletionTimestamp":"2026-01-01T00:00:00Z"}}`},
			"refused: unstick works through the API server", nil},
		// The claim's volume is set to Retain through the API server
		// before anything is deleted: refused before the question.
		{name: "purge --retain-volumes", args: []string{"purge", "-n", "vault", "--confirm", "--retain-volumes", "--accept-single-witness"},
			put:   map[string]string{"/registry/namespaces/default": `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"default","uid":"d1"}}`},
			plant: plantRefusedClaim, want: "/registry/persistentvolumeclaims/vault/data: --retain-volumes sets each bound PersistentVolume to reclaim policy Retain through the API server before its claim is deleted, and this run has no API server"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cli, ep := etcdtest.Start(t)
			for k, v := range tc.put {
				if _, err := cli.Put(context.Background(), k, v); err != nil {
					t.Fatal(err)
				}
			}
			if tc.plant != nil {
				tc.plant(t, cli)
			}
			before := keyspace(t, cli)
			var out, errOut bytes.Buffer
			code := Run(append(tc.args, "--endpoints", ep, "--no-api", "--backup-dir", t.TempDir()), strings.NewReader(""), &out, &errOut)
			// No --yes and no terminal: a refusal after the question would
			// exit 2 (the question cannot be answered), not 1.
			if code != ExitError || !strings.Contains(errOut.String(), tc.want) || strings.Contains(out.String(), "Re-run with --confirm") {
				t.Errorf("exit %d, want %d and %q\n%s%s", code, ExitError, tc.want, errOut.String(), out.String())
			}
			if after := keyspace(t, cli); !maps.Equal(before, after) {
				t.Errorf("the keyspace changed")
			}
		})
	}
}

// TestPurgeDryRunSaysRetainNeedsTheAPIServer: the dry run of a purge with
// --retain-volumes and no API server says it would be refused and why (the
// Retain goes through the API server), in the table and in -o json, and
// never tells the operator to run it again with --confirm.
func TestPurgeDryRunSaysRetainNeedsTheAPIServer(t *testing.T) {
	cli, ep := etcdtest.Start(t)
	if _, err := cli.Put(context.Background(), "/registry/namespaces/default", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"default","uid":"d1"}}`); err != nil {
		t.Fatal(err)
	}
	plantRefusedClaim(t, cli)
	args := []string{"purge", "-n", "vault", "--retain-volumes", "--accept-single-witness", "--endpoints", ep, "--no-api"}
	var out, errOut bytes.Buffer
	code := Run(args, strings.NewReader(""), &out, &errOut)
	flat := strings.Join(strings.Fields(out.String()), " ")
	if code != ExitOK || !strings.Contains(flat, "Would be refused: --retain-volumes sets each bound PersistentVolume to reclaim policy Retain through the API server") ||
		!strings.Contains(flat, "Keys: /registry/persistentvolumeclaims/vault/data") || strings.Contains(flat, "Re-run with --confirm") {
		t.Errorf("dry run: exit %d\n%s%s", code, errOut.String(), out.String())
	}
	out.Reset()
	errOut.Reset()
	code = Run(append(args, "-o", "json"), strings.NewReader(""), &out, &errOut)
	var doc struct {
		Blockers []struct {
			Keys   []string `json:"keys"`
			Reason string   `json:"reason"`
		} `json:"blockers"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil || code != ExitOK || len(doc.Blockers) != 1 ||
		!slices.Equal(doc.Blockers[0].Keys, []string{"/registry/persistentvolumeclaims/vault/data"}) || !strings.Contains(doc.Blockers[0].Reason, "this run has no API server") {
		t.Errorf("dry run -o json: exit %d, %v, blockers %+v\n%s", code, err, doc.Blockers, errOut.String())
	}
}

// keyspace is every key cli reads, with its mod revision.
func keyspace(t *testing.T, cli *clientv3.Client) map[string]int64 {
	t.Helper()
	resp, err := cli.Get(context.Background(), "", clientv3.WithFromKey(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, kv := range resp.Kvs {
		out[string(kv.Key)] = kv.ModRevision
	}
	return out
}

// TestBackupLsWhereNothingWasWritten: a node where regghost never wrote has
// no backup directory; backup ls says there is no backup, exit 0.
func TestBackupLsWhereNothingWasWritten(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "never")
	var out, errOut bytes.Buffer
	code := Run([]string{"backup", "ls", "--backup-dir", dir}, strings.NewReader(""), &out, &errOut)
	if code != ExitOK || !strings.Contains(out.String(), "No backup in "+dir) || errOut.Len() != 0 {
		t.Errorf("exit %d\n%s%s", code, errOut.String(), out.String())
	}
}

// TestDanglingExitsThreeOnWhatIsGone: dangling's dry run exits 3 when it
// finds a reference whose target is gone, as scan does and the README says.
func TestDanglingExitsThreeOnWhatIsGone(t *testing.T) {
	cli, ep := etcdtest.Start(t)
	if _, err := cli.Put(context.Background(), "/registry/apiregistration.k8s.io/apiservices/v1beta1.metrics.example.com",
		`{"apiVersion":"apiregistration.k8s.io/v1","kind":"APIService","metadata":{"name":"v1beta1.metrics.example.com","uid":"a1"},`+
			`"spec":{"group":"metrics.example.com","version":"v1beta1","service":{"namespace":"gone","name":"metrics"},"groupPriorityMinimum":100,"versionPriority":100}}`); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := Run([]string{"dangling", "--endpoints", ep, "--no-api"}, strings.NewReader(""), &out, &errOut)
	if code != ExitGhosts || !strings.Contains(out.String(), "v1beta1.metrics.example.com") {
		t.Errorf("exit %d\n%s%s", code, errOut.String(), out.String())
	}
}

// TestPurgeOfAStuckObjectNamesUnstickFirst: a purge plan that would delete
// an object stuck terminating on its finalizers names unstick first, which
// ends that safely, before the table of what would go.
func TestPurgeOfAStuckObjectNamesUnstickFirst(t *testing.T) {
	_, ep, _ := goldenSnapshot(t)
	var out, errOut bytes.Buffer
	Run([]string{"purge", "-n", "shop", "--force-class", "stuck-terminating", "--endpoints", ep, "--no-api", "--backup-dir", t.TempDir()}, strings.NewReader(""), &out, &errOut)
	got := strings.Join(strings.Fields(out.String()), " ")
	want := "1 object is stuck terminating on finalizers: run `regghost unstick namespace shop` first"
	if !strings.HasPrefix(got, want) {
		t.Errorf("the plan does not start by naming unstick:\n%s%s", errOut.String(), out.String())
	}
}

// TestUnstickTakesDashN: unstick takes -n NAME as every command that takes
// a namespace does, once.
func TestUnstickTakesDashN(t *testing.T) {
	_, ep, _ := goldenSnapshot(t)
	var out, errOut bytes.Buffer
	if code := Run([]string{"unstick", "-n", "shpo", "--endpoints", ep, "--no-api"}, strings.NewReader(""), &out, &errOut); code != ExitError ||
		!strings.Contains(errOut.String(), "namespace shpo: nothing of that name is in etcd") {
		t.Errorf("unstick -n shpo: exit %d\n%s%s", code, errOut.String(), out.String())
	}
	errOut.Reset()
	if code := Run([]string{"unstick", "-n", "shop", "ns/shop", "--endpoints", ep, "--no-api"}, strings.NewReader(""), &out, &errOut); code != ExitUsage ||
		!strings.Contains(errOut.String(), "give the target once") {
		t.Errorf("unstick -n shop ns/shop: exit %d\n%s", code, errOut.String())
	}
}

// TestLeasesOnTheGolden: leases reads a cluster whose events all carry a
// lease and are young: nothing to say, exit 0; an event written back
// without its lease is named, exit 3.
func TestLeasesOnTheGolden(t *testing.T) {
	cli, ep, _ := goldenSnapshot(t)
	var out, errOut bytes.Buffer
	if code := Run([]string{"leases", "--endpoints", ep, "--no-api"}, strings.NewReader(""), &out, &errOut); code != ExitOK {
		t.Errorf("leases: exit %d\n%s%s", code, errOut.String(), out.String())
	}
	if _, err := cli.Put(context.Background(), "/registry/events/shop/restored.1", "not an event"); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if code := Run([]string{"leases", "--endpoints", ep, "--no-api", "-o", "name"}, strings.NewReader(""), &out, &errOut); code != ExitGhosts ||
		strings.TrimSpace(out.String()) != "/registry/events/shop/restored.1" {
		t.Errorf("leases -o name: exit %d\n%s%s", code, errOut.String(), out.String())
	}
}

// TestLeasesRemovalThatCannotFitIsRefusedFirst: a removal whose slowest
// run (its audit at the removal's lowest pace, then its deletes) cannot
// fit in --command-timeout is refused before the audit, with the timeout
// that would do; nothing is written.
func TestLeasesRemovalThatCannotFitIsRefusedFirst(t *testing.T) {
	cli, ep, _ := goldenSnapshot(t)
	if _, err := cli.Put(context.Background(), "/registry/events/shop/restored.1", "not an event"); err != nil {
		t.Fatal(err)
	}
	before, err := cli.Get(context.Background(), "", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := Run([]string{"leases", "--confirm", "--yes", "--rate", "0.01", "--command-timeout", "30s", "--backup-dir", t.TempDir(), "--endpoints", ep, "--no-api"}, strings.NewReader(""), &out, &errOut)
	if code != ExitUsage || !strings.Contains(errOut.String(), "give --command-timeout") || strings.Contains(out.String(), "Events past") {
		t.Errorf("leases --confirm at --rate 0.01 in 30s: exit %d\n%s%s", code, errOut.String(), out.String())
	}
	after, err := cli.Get(context.Background(), "", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if after.Header.Revision != before.Header.Revision {
		t.Errorf("the refused removal wrote: revision %d, then %d", before.Header.Revision, after.Header.Revision)
	}
}

// TestEachWayBackRefusesTheOthersInput: restore, recover and snapshot
// restore each take one kind of source and refuse another's with the
// command that takes it.
func TestEachWayBackRefusesTheOthersInput(t *testing.T) {
	_, ep, db := goldenSnapshot(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "backup.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	logical := filepath.Join(t.TempDir(), snapshot.LogicalSnapshotFile)
	if err := os.WriteFile(logical, []byte(`{"format":"`+snapshot.LogicalFormat+`"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"restore", db}, "is an etcd snapshot, not a regghost backup: `regghost recover --snapshot " + db + "`"},
		{[]string{"restore", logical}, "is a logical snapshot of kine, not a regghost backup: `regghost snapshot restore " + logical + "`"},
		{[]string{"recover", "--snapshot", dir}, "is a regghost backup directory, not a snapshot: `regghost restore " + dir + "`"},
		{[]string{"recover", "--db", db}, "recover takes its source as --snapshot FILE (or --rev N); --db is for the read-only commands"},
		{[]string{"snapshot", "restore", dir}, "is a regghost backup directory, not a logical snapshot: `regghost restore " + dir + "`"},
	} {
		var out, errOut bytes.Buffer
		code := Run(append(tc.args, "--endpoints", ep, "--no-api"), strings.NewReader(""), &out, &errOut)
		if code != ExitUsage || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%v: exit %d\n%s", tc.args, code, errOut.String())
		}
	}
}

// TestCompletion: the shell completes -o's formats, -n's namespaces as
// etcd holds them, and restore's backup directories.
func TestCompletion(t *testing.T) {
	_, ep, _ := goldenSnapshot(t)
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "20261206T000000Z-namespace-shop"), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("REGGHOST_BACKUP_DIR", root)
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"__complete", "scan", "-o", ""}, []string{"wide", "json", "jsonpath="}},
		{[]string{"__complete", "purge", "--endpoints", ep, "-n", ""}, []string{"default", "kube-system", "shop"}},
		{[]string{"__complete", "restore", ""}, []string{filepath.Join(root, "20261206T000000Z-namespace-shop")}},
		{[]string{"__complete", "unstick", ""}, []string{"namespace", "crd"}},
		{[]string{"__complete", "unstick", "--endpoints", ep, "namespace", ""}, []string{"kube-system", "shop"}},
		{[]string{"__complete", "get", "--endpoints", ep, "/registry/namespaces/s"}, []string{"/registry/namespaces/shop"}},
		{[]string{"__complete", "members", "replace", "--endpoints", ep, ""}, []string{"default"}},
	} {
		var out, errOut bytes.Buffer
		Run(tc.args, strings.NewReader(""), &out, &errOut)
		got := strings.Fields(out.String())
		for _, w := range tc.want {
			if !slices.Contains(got, w) {
				t.Errorf("%v: %q not completed: %v", tc.args, w, got)
			}
		}
	}
}

// TestKubectlTargetForms: get and history take an object as kubectl names
// it (TYPE/NAME, TYPE NAME, with -n) as well as its key, and the same
// object comes out; a type nobody serves is a usage error naming the
// nearest.
func TestKubectlTargetForms(t *testing.T) {
	_, ep, _ := goldenSnapshot(t)
	run := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := Run(append(args, "--endpoints", ep, "--no-api"), strings.NewReader(""), &out, &errOut)
		return code, out.String(), errOut.String()
	}
	_, want, _ := run("get", "/registry/pods/shop/web", "-o", "json")
	for _, args := range [][]string{{"get", "pod/web", "-n", "shop"}, {"get", "po", "web", "-n", "shop"}} {
		code, got, errOut := run(append(args, "-o", "json")...)
		if code != ExitOK || got != want {
			t.Errorf("%v: exit %d, %s\n%s", args, code, errOut, got)
		}
	}
	if code, _, errOut := run("get", "widget/w1", "-n", "shop"); code != ExitUsage || !strings.Contains(errOut, "names no resource") {
		t.Errorf("get widget/w1: exit %d, want %d\n%s", code, ExitUsage, errOut)
	}
	// -o raw: the stored bytes as they are, nothing decoded.
	if code, raw, errOut := run("get", "pod/web", "-n", "shop", "-o", "raw"); code != ExitOK || !strings.HasPrefix(raw, "k8s\x00") {
		t.Errorf("get pod/web -o raw: exit %d, %q\n%s", code, raw[:min(len(raw), 20)], errOut)
	}
	code, out, errOut := run("history", "pod/web", "-n", "shop")
	if code != ExitOK || !strings.Contains(out, "/registry/pods/shop/web") {
		t.Errorf("history pod/web -n shop: exit %d\n%s%s", code, errOut, out)
	}
	// A key under the registry with one slash is still a key.
	if code, out, errOut := run("history", "namespaces/shop"); code != ExitOK || !strings.Contains(out, "/registry/namespaces/shop") {
		t.Errorf("history namespaces/shop: exit %d\n%s%s", code, errOut, out)
	}
	// An object of which nothing is held is an error naming the nearest.
	if code, _, errOut := run("history", "pod", "wbe", "-n", "shop"); code != ExitError || !strings.Contains(errOut, "did you mean web") {
		t.Errorf("history pod wbe -n shop: exit %d\n%s", code, errOut)
	}
	for _, args := range [][]string{{"get", "pdo/web", "-n", "shop"}, {"history", "pdo", "web"}, {"get", "/registry/pods/shop/web", "-n", "shop"}} {
		code, _, errOut := run(args...)
		if code != ExitUsage || !strings.Contains(errOut, "did you mean") && !strings.Contains(errOut, "does not apply to a key") {
			t.Errorf("%v: exit %d, want %d\n%s", args, code, ExitUsage, errOut)
		}
	}
}
