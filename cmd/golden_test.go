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
func TestGolden(t *testing.T) {
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
	}
	steps := []step{
		{"scan", []string{"scan"}},
		{"scan-wide", []string{"scan", "-o", "wide"}},
		{"scan-no-headers", []string{"scan", "--no-headers"}},
		{"scan-name", []string{"scan", "-o", "name"}},
		{"scan-json", []string{"scan", "-o", "json"}},
		{"scan-yaml", []string{"scan", "-n", "shop", "-o", "yaml"}},
		{"scan-jsonpath", []string{"scan", "-o", "jsonpath={range .findings[*]}{.key}{\"\\t\"}{.classes[0]}{\"\\n\"}{end}"}},
		{"scan-go-template", []string{"scan", "-o", "go-template={{range .findings}}{{.name}} {{end}}"}},
		{"scan-custom-columns", []string{"scan", "-o", "custom-columns=KEY:.key,CLASS:.classes[0],REV:.modRevision"}},
		{"scan-custom-columns-no-headers", []string{"scan", "-o", "custom-columns=KEY:.key", "--no-headers"}},
		{"scan-bad-output", []string{"scan", "-o", "bogus"}},
		{"scan-bad-terminating-after", []string{"scan", "--terminating-after", "0"}},
		{"scan-bad-api-check-limit", []string{"scan", "--api-check-limit", "0"}},
		{"scan-bad-max-keys-per-second", []string{"scan", "--max-keys-per-second", "-1"}},
		{"scan-bad-dial-timeout", []string{"scan", "--dial-timeout", "0"}},
		{"scan-bad-command-timeout", []string{"scan", "--command-timeout", "-1s"}},
		{"purge-dry-run", []string{"purge", "-n", "kb-system", "--accept-single-witness", "--backup-dir", backups}},
		{"purge-dry-run-json", []string{"purge", "-n", "kb-system", "--accept-single-witness", "--backup-dir", backups, "-o", "json"}},
		{"purge-dry-run-name", []string{"purge", "-n", "kb-system", "--accept-single-witness", "--backup-dir", backups, "-o", "name"}},
		{"purge-bad-output", []string{"purge", "-n", "kb-system", "-o", "wide"}},
		{"purge-bad-rate", []string{"purge", "-n", "kb-system", "--rate", "0"}},
		{"purge-bad-terminating-after", []string{"purge", "-n", "kb-system", "--terminating-after", "0"}},
		{"purge", []string{"purge", "-n", "kb-system", "--accept-single-witness", "--backup-dir", backups, "--confirm", "--yes"}},
		{"backup-ls", []string{"backup", "ls", "--backup-dir", backups}},
		{"backup-ls-json", []string{"backup", "ls", "--backup-dir", backups, "-o", "json"}},
		{"backup-show", []string{"backup", "show", "<backup>"}},
		{"backup-show-name", []string{"backup", "show", "<backup>", "-o", "name"}},
		{"backup-show-yaml", []string{"backup", "show", "<backup>", "-o", "yaml"}},
		{"backup-show-bad-output", []string{"backup", "show", "<backup>", "-o", "bogus"}},
		{"restore-dry-run", []string{"restore", "<backup>"}},
		{"restore-dry-run-json", []string{"restore", "<backup>", "-o", "json"}},
		{"restore", []string{"restore", "<backup>", "--confirm", "--yes", "-o", "json"}},
		{"snapshot-status", []string{"snapshot", "status", "<backup>/snapshot.db"}},
		{"snapshot-restore-not-logical", []string{"snapshot", "restore", "<backup>/snapshot.db"}},
		{"get", []string{"get", "/registry/pods/shop/web"}},
		{"get-json", []string{"get", "/registry/pods/shop/web", "-o", "json"}},
		{"get-jsonpath", []string{"get", "/registry/pods/shop/stuck", "-o", "jsonpath={.metadata.finalizers[0]}"}},
		{"get-bad-output", []string{"get", "/registry/pods/shop/web", "-o", "name"}},
		{"versions", []string{"versions"}},
		{"versions-json", []string{"versions", "-o", "json"}},
		{"version-bad-output", []string{"version", "-o", "wide"}},
	}
	backup := ""
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
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
			if i := strings.IndexFunc(out.String(), func(r rune) bool { return isControl(r) && r != '\n' && r != '\t' }); i >= 0 {
				t.Errorf("%s: raw control character in stdout at byte %d: %q", s.name, i, out.String()[max(0, i-20):min(len(out.String()), i+20)])
			}
			if strings.HasSuffix(s.name, "json") && code != 2 {
				if !json.Valid(out.Bytes()) {
					t.Errorf("%s: stdout is not JSON", s.name)
				}
			}
			if s.name == "scan" || s.name == "scan-no-headers" {
				for _, line := range strings.Split(out.String(), "\n") {
					if n := utf8.RuneCountInString(line); n > tableWidth {
						t.Errorf("%s: line of %d columns: %q", s.name, n, line)
					}
				}
			}
		})
	}
}

// TestEscapes: control characters are escaped in cells and in the stream,
// and a C1 control split across two writes is still caught.
func TestEscapes(t *testing.T) {
	for _, tt := range []struct{ in, cell string }{
		{"plain", "plain"},
		{"a\x1b[2Jb", `a\u001b[2Jb`},
		{"tab\tnew\nline\r", `tab\tnew\nline\u000d`},
		{"c1\u009b31m", `c1\u009b31m`},
		{"bad\xffutf8", `bad\xffutf8`},
		{"ünïcödé ✓", "ünïcödé ✓"},
	} {
		if got := escapeCell(tt.in); got != tt.cell {
			t.Errorf("escapeCell(%q) = %q, want %q", tt.in, got, tt.cell)
		}
	}
	var b bytes.Buffer
	w := &safeWriter{w: &b}
	for _, part := range []string{"x\xc2", "\x9b31m\x1b", "]0;t\x07\n\ty\x7f", "é"} {
		if _, err := w.Write([]byte(part)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.flush(); err != nil {
		t.Fatal(err)
	}
	if want := `x\u009b31m\u001b]0;t\u0007` + "\n\ty" + `\u007fé`; b.String() != want {
		t.Errorf("safeWriter wrote %q, want %q", b.String(), want)
	}
}
