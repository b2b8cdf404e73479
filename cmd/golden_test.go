package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/session"
	"github.com/regghost/regghost/pkg/table"
	"github.com/regghost/regghost/pkg/textsafe"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// goldenNow is the clock of the golden runs.
var goldenNow = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// evilName holds the escape sequences a hostile object name could carry: a
// title change, a screen clear, a C1 CSI and a carriage return.
const evilName = "evil\x1b]0;pwned\x07\x1b[2J\u009b31m\rname"

// plantGolden writes a small keyspace with one of every kind of finding,
// created at fixed times, so that every output is the same on every run.
func plantGolden(t *testing.T, cli *clientv3.Client) {
	t.Helper()
	created := metav1.NewTime(goldenNow.Add(-3 * time.Hour))
	deleted := metav1.NewTime(goldenNow.Add(-2 * time.Hour))
	meta := func(ns, name string, uid string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid), CreationTimestamp: created}
	}
	put := func(key, value string) {
		if _, err := cli.Put(context.Background(), key, value); err != nil {
			t.Fatal(err)
		}
	}
	for i, ns := range []string{"default", "kube-system", "shop"} {
		put("/registry/namespaces/"+ns, etcdtest.Encode(t, &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: meta("", ns, "00000000-0000-0000-0000-00000000000"+string(rune('1'+i)))}))
	}
	pod := func(ns, name, uid string, mutate ...func(*corev1.Pod)) string {
		p := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: meta(ns, name, uid),
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}}}
		for _, m := range mutate {
			m(p)
		}
		return etcdtest.Encode(t, p)
	}
	cm := func(ns, name, uid string) string {
		return etcdtest.Encode(t, &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: meta(ns, name, uid)})
	}
	// kb-system's namespace key is gone: its objects are orphans.
	put("/registry/pods/kb-system/api-0", pod("kb-system", "api-0", "10000000-0000-0000-0000-000000000001"))
	put("/registry/pods/kb-system/api-1", pod("kb-system", "api-1", "10000000-0000-0000-0000-000000000002"))
	put("/registry/configmaps/kb-system/settings", cm("kb-system", "settings", "10000000-0000-0000-0000-000000000003"))
	put("/registry/configmaps/kb-system/"+evilName, cm("kb-system", evilName, "10000000-0000-0000-0000-000000000004"))
	// A custom resource whose CRD is gone, in a namespace that exists.
	put("/registry/example.com/widgets/shop/w1", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1","namespace":"shop","uid":"20000000-0000-0000-0000-000000000001","creationTimestamp":"`+created.UTC().Format(time.RFC3339)+`"}}`)
	// A value that does not decode, and a live pod stuck on a finalizer.
	put("/registry/configmaps/shop/broken", "k8s\x00\x0a\x02v1\x12\x09Config")
	put("/registry/pods/shop/web", pod("shop", "web", "30000000-0000-0000-0000-000000000001"))
	put("/registry/pods/shop/stuck", pod("shop", "stuck", "30000000-0000-0000-0000-000000000002", func(p *corev1.Pod) {
		p.DeletionTimestamp = &deleted
		p.Finalizers = []string{"example.com/never-removed"}
	}))
}

// plantRefusedClaim writes namespace vault's keys, its namespace key gone:
// a claim bound to a volume whose reclaim policy is Delete (a purge is
// refused without --retain-volumes: the widest screen of an incident), a
// pod bound to a node, and a config map whose name is longer than a table
// cell at 120 columns.
func plantRefusedClaim(t *testing.T, cli *clientv3.Client) {
	t.Helper()
	put := func(key, value string) {
		if _, err := cli.Put(context.Background(), key, value); err != nil {
			t.Fatal(err)
		}
	}
	meta := func(ns, name string, uid string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid), CreationTimestamp: metav1.NewTime(goldenNow.Add(-3 * time.Hour))}
	}
	delete := corev1.PersistentVolumeReclaimDelete
	put("/registry/persistentvolumes/pvc-40000000-0000-0000-0000-000000000001", etcdtest.Encode(t, &corev1.PersistentVolume{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolume"},
		ObjectMeta: meta("", "pvc-40000000-0000-0000-0000-000000000001", "40000000-0000-0000-0000-000000000002"),
		Spec: corev1.PersistentVolumeSpec{PersistentVolumeReclaimPolicy: delete, StorageClassName: "hostpath",
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/hostpath_pv/40000000-0000-0000-0000-000000000003"}},
			ClaimRef:               &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "vault", Name: "data", UID: "40000000-0000-0000-0000-000000000004"}},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound},
	}))
	class := "hostpath"
	put("/registry/persistentvolumeclaims/vault/data", etcdtest.Encode(t, &corev1.PersistentVolumeClaim{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: func() metav1.ObjectMeta {
			m := meta("vault", "data", "40000000-0000-0000-0000-000000000004")
			m.Finalizers = []string{"kubernetes.io/pvc-protection"}
			return m
		}(),
		Spec:   corev1.PersistentVolumeClaimSpec{StorageClassName: &class, VolumeName: "pvc-40000000-0000-0000-0000-000000000001"},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound},
	}))
	put("/registry/pods/vault/unsealer-0", etcdtest.Encode(t, &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: meta("vault", "unsealer-0", "40000000-0000-0000-0000-000000000005"),
		Spec:       corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}}}))
	put("/registry/configmaps/vault/"+longName, etcdtest.Encode(t, &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: meta("vault", longName, "40000000-0000-0000-0000-000000000006")}))
}

// longName is a name longer than a table cell can hold at 120 columns.
const longName = "unsealer-configuration-generated-by-the-operator-for-the-primary-cluster-in-region-europe-west-with-audit-logging"

// normalize replaces what differs between runs: the endpoint and temporary
// directories, checksums, etcd's cluster ID and bbolt's hash.
func normalize(s string, repl map[string]string) string {
	from := make([]string, 0, len(repl))
	for f := range repl {
		from = append(from, f)
	}
	// The longest first: the backup directory is inside the temporary one.
	sort.Slice(from, func(i, j int) bool { return len(from[i]) > len(from[j]) })
	for _, f := range from {
		s = strings.ReplaceAll(s, f, repl[f])
	}
	s = regexp.MustCompile(`[0-9a-f]{64}`).ReplaceAllString(s, "<sha256>")
	s = regexp.MustCompile(`(cluster |"clusterID": ")[0-9a-f]{8,16}`).ReplaceAllString(s, "${1}<cluster>")
	s = regexp.MustCompile(`(hash |"hash": )\d+`).ReplaceAllString(s, "${1}<hash>")
	s = regexp.MustCompile(`(\d+ bytes|"size": \d+)`).ReplaceAllString(s, "<size>")
	return s
}

// TestGolden runs every command in every output format against an embedded
// etcd holding a fixed keyspace and compares stdout, stderr and the exit
// code with testdata/golden/*.golden (go test ./cmd -run TestGolden -update
// rewrites them). It also checks that the default scan table fits 120
// columns and that nothing from etcd reaches the terminal unescaped.
func TestGolden(t *testing.T) { testGolden(t) }

// TestGoldenSpilled runs the golden steps with every scan's findings
// spilled to disk as soon as there are two: a report too large for memory
// must print byte for byte what one held in memory prints.
func TestGoldenSpilled(t *testing.T) {
	t.Setenv(session.SpillAfterEnv, "1")
	testGolden(t)
}

func testGolden(t *testing.T) {
	clock = func() time.Time { return goldenNow }
	defer func() { clock = time.Now }()
	cli, ep := etcdtest.Start(t)
	plantGolden(t, cli)
	// A directory whose path has the same length on every run, so that
	// the table columns holding it line up the same way.
	tmp := filepath.Join(os.TempDir(), fmt.Sprintf("regghost-golden-%010d", os.Getpid()))
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	backups := filepath.Join(tmp, "backups")
	repl := map[string]string{ep: "<etcd>", tmp: "<tmp>"}
	etcd := []string{"--endpoints", ep, "--no-api"}
	type step struct {
		name string
		args []string
		// setup runs before the step.
		setup func(t *testing.T)
	}
	run := func(t *testing.T, args ...string) string {
		var out, errOut bytes.Buffer
		if code := Run(append(args, etcd...), strings.NewReader(""), &out, &errOut); code != 0 && code != 3 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut.String())
		}
		return out.String()
	}
	plan := filepath.Join(tmp, "vault-plan.json")
	steps := []step{
		{name: "scan", args: []string{"scan"}},
		{name: "scan-wide", args: []string{"scan", "-o", "wide"}},
		{name: "scan-no-headers", args: []string{"scan", "--no-headers"}},
		{name: "scan-name", args: []string{"scan", "-o", "name"}},
		{name: "scan-json", args: []string{"scan", "-o", "json"}},
		{name: "scan-yaml", args: []string{"scan", "-n", "shop", "-o", "yaml"}},
		{name: "scan-jsonpath", args: []string{"scan", "-o", "jsonpath={range .findings[*]}{.key}{\"\\t\"}{.classes[0]}{\"\\n\"}{end}"}},
		{name: "scan-go-template", args: []string{"scan", "-o", "go-template={{range .findings}}{{.name}} {{end}}"}},
		{name: "scan-custom-columns", args: []string{"scan", "-o", "custom-columns=KEY:.key,CLASS:.classes[0],REV:.modRevision"}},
		{name: "scan-custom-columns-no-headers", args: []string{"scan", "-o", "custom-columns=KEY:.key", "--no-headers"}},
		{name: "scan-bad-output", args: []string{"scan", "-o", "bogus"}},
		{name: "scan-bad-terminating-after", args: []string{"scan", "--terminating-after", "0"}},
		{name: "scan-bad-api-check-limit", args: []string{"scan", "--api-check-limit", "0"}},
		{name: "scan-bad-max-keys-per-second", args: []string{"scan", "--max-keys-per-second", "-1"}},
		{name: "scan-bad-dial-timeout", args: []string{"scan", "--dial-timeout", "0"}},
		{name: "scan-bad-command-timeout", args: []string{"scan", "--command-timeout", "-1s"}},
		{name: "purge-dry-run", args: []string{"purge", "-n", "kb-system", "--accept-single-witness", "--backup-dir", backups}},
		{name: "purge-dry-run-json", args: []string{"purge", "-n", "kb-system", "--accept-single-witness", "--backup-dir", backups, "-o", "json"}},
		{name: "purge-dry-run-name", args: []string{"purge", "-n", "kb-system", "--accept-single-witness", "--backup-dir", backups, "-o", "name"}},
		{name: "purge-bad-output", args: []string{"purge", "-n", "kb-system", "-o", "raw"}},
		{name: "purge-bad-rate", args: []string{"purge", "-n", "kb-system", "--rate", "0"}},
		{name: "purge-bad-terminating-after", args: []string{"purge", "-n", "kb-system", "--terminating-after", "0"}},
		{name: "purge", args: []string{"purge", "-n", "kb-system", "--accept-single-witness", "--backup-dir", backups, "--confirm", "--yes"}},
		{name: "backup-ls", args: []string{"backup", "ls", "--backup-dir", backups}},
		{name: "backup-ls-json", args: []string{"backup", "ls", "--backup-dir", backups, "-o", "json"}},
		{name: "backup-show", args: []string{"backup", "show", "<backup>"}},
		{name: "backup-show-name", args: []string{"backup", "show", "<backup>", "-o", "name"}},
		{name: "backup-show-yaml", args: []string{"backup", "show", "<backup>", "-o", "yaml"}},
		{name: "backup-show-bad-output", args: []string{"backup", "show", "<backup>", "-o", "bogus"}},
		{name: "restore-dry-run", args: []string{"restore", "<backup>"}},
		{name: "restore-dry-run-json", args: []string{"restore", "<backup>", "-o", "json"}},
		{name: "restore", args: []string{"restore", "<backup>", "--confirm", "--yes", "-o", "json"}},
		{name: "snapshot-status", args: []string{"snapshot", "status", "<backup>/snapshot.db"}},
		{name: "snapshot-restore-not-logical", args: []string{"snapshot", "restore", "<backup>/snapshot.db"}},
		{name: "get", args: []string{"get", "/registry/pods/shop/web"}},
		{name: "get-json", args: []string{"get", "/registry/pods/shop/web", "-o", "json"}},
		{name: "get-jsonpath", args: []string{"get", "/registry/pods/shop/stuck", "-o", "jsonpath={.metadata.finalizers[0]}"}},
		{name: "get-bad-output", args: []string{"get", "/registry/pods/shop/web", "-o", "name"}},
		{name: "stored-versions", args: []string{"stored-versions"}},
		{name: "stored-versions-json", args: []string{"stored-versions", "-o", "json"}},
		{name: "version-bad-output", args: []string{"version", "-o", "wide"}},
		// The screens of a purge and a restore that cut and wrap, kept at the
		// end so that the steps above see the keyspace they always saw.
		{name: "backup-show-wide", args: []string{"backup", "show", "<backup>", "-o", "wide"}},
		{name: "backup-ls-wide", args: []string{"backup", "ls", "--backup-dir", backups, "-o", "wide"}},
		{name: "restore-again", args: []string{"restore", "<backup>", "--confirm", "--yes"}, setup: func(t *testing.T) {
			// Someone wrote one of the restored keys since: a conflict.
			if _, err := cli.Put(context.Background(), "/registry/configmaps/kb-system/"+evilName, "other bytes"); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "restore-again-wide", args: []string{"restore", "<backup>", "-o", "wide"}},
		{name: "purge-refused-dry-run", args: []string{"purge", "-n", "vault"}, setup: func(t *testing.T) { plantRefusedClaim(t, cli) }},
		{name: "purge-refused-dry-run-wide", args: []string{"purge", "-n", "vault", "-o", "wide"}},
		{name: "purge-refused", args: []string{"purge", "-n", "vault", "--accept-single-witness", "--confirm", "--yes", "--backup-dir", backups}},
		{name: "purge-from-changed", args: []string{"purge", "-n", "vault", "--accept-single-witness", "--from", plan}, setup: func(t *testing.T) {
			// Reviewed, then changed: the long-named config map is skipped.
			if err := os.WriteFile(plan, []byte(run(t, "scan", "-n", "vault", "-o", "json")), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := cli.Put(context.Background(), "/registry/configmaps/vault/"+longName, etcdtest.Encode(t, &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
				ObjectMeta: metav1.ObjectMeta{Namespace: "vault", Name: longName, UID: "40000000-0000-0000-0000-000000000006", CreationTimestamp: metav1.NewTime(goldenNow.Add(-3 * time.Hour))},
				Data:       map[string]string{"changed": "yes"}})); err != nil {
				t.Fatal(err)
			}
		}},
	}
	backup := ""
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			if s.setup != nil {
				s.setup(t)
			}
			args := append([]string{}, s.args...)
			for i, a := range args {
				if backup != "" {
					args[i] = strings.ReplaceAll(a, "<backup>", backup)
				}
			}
			var out, errOut bytes.Buffer
			code := Run(append(args, etcd...), strings.NewReader(""), &out, &errOut)
			if s.name == "purge" {
				entries, err := os.ReadDir(backups)
				if err != nil || len(entries) != 1 {
					t.Fatalf("backups: %v %v", entries, err)
				}
				backup = filepath.Join(backups, entries[0].Name())
				repl[backup] = "<backup>"
			}
			got := normalize("exit "+string(rune('0'+code))+"\n--- stdout\n"+out.String()+"--- stderr\n"+errOut.String(), repl)
			path := filepath.Join("testdata", "golden", s.name+".golden")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test ./cmd -run TestGolden -update writes it)", err)
			}
			if got != string(want) {
				t.Errorf("%s differs from %s:\n%s", s.name, path, got)
			}
			// Nothing from etcd reaches the terminal raw.
			if i := strings.IndexFunc(out.String(), func(r rune) bool { return textsafe.IsControl(r) && r != '\n' && r != '\t' }); i >= 0 {
				t.Errorf("%s: raw control character in stdout at byte %d: %q", s.name, i, out.String()[max(0, i-20):min(len(out.String()), i+20)])
			}
			if strings.HasSuffix(s.name, "json") && code != 2 {
				if !json.Valid(out.Bytes()) {
					t.Errorf("%s: stdout is not JSON", s.name)
				}
			}
			// Every default table and paragraph fits 120 columns, as
			// printed (before the temporary paths are normalized).
			if defaultFormat(args) {
				for _, line := range strings.Split(out.String(), "\n") {
					if n := utf8.RuneCountInString(line); n > table.MaxWidth {
						t.Errorf("%s: line of %d columns: %q", s.name, n, line)
					}
				}
			}
		})
	}
}

// defaultFormat reports whether args print a command's default table (no
// -o, or -o table); get's default is YAML.
func defaultFormat(args []string) bool {
	if args[0] == "get" {
		return false
	}
	for i, a := range args {
		if a == "-o" || a == "--output" {
			return i+1 < len(args) && args[i+1] == "table"
		}
		if strings.HasPrefix(a, "-o=") || strings.HasPrefix(a, "--output=") {
			return strings.HasSuffix(a, "=table")
		}
	}
	return true
}
