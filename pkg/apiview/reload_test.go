package apiview

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func kubeconfig(server, token, caFile string) string {
	ca := ""
	if caFile != "" {
		ca = ", certificate-authority: " + caFile
	}
	return `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "` + server + `"` + ca + `}}]
users: [{name: u, user: {token: "` + token + `"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`
}

// TestLoaderReadsChangedFiles: a Loader keeps its configuration while the
// kubeconfig and the files it names are unchanged, loads it again (a new
// generation, OnChange told) when either changes on disk, and keeps the
// last good one while a rewritten file cannot be loaded.
func TestLoaderReadsChangedFiles(t *testing.T) {
	dir := t.TempDir()
	path, ca := filepath.Join(dir, "kubeconfig"), filepath.Join(dir, "ca.crt")
	write := func(p, content string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(ca, "first CA")
	write(path, kubeconfig("https://a.example:6443", "token-a", ca))
	l := NewLoader(Options{Kubeconfig: path, Timeout: 3 * time.Second})
	l.MinInterval = time.Nanosecond
	var changes [][]string
	l.OnChange = func(files []string) { changes = append(changes, files) }

	steps := []struct {
		name    string
		change  func()
		wantGen uint64
		// wantToken is the configuration's bearer token after the step.
		wantToken string
		wantErr   string
	}{
		{"first read", func() {}, 1, "token-a", ""},
		{"unchanged", func() {}, 1, "token-a", ""},
		{"same content written again", func() { write(path, kubeconfig("https://a.example:6443", "token-a", ca)) }, 1, "token-a", ""},
		{"another identity", func() { write(path, kubeconfig("https://a.example:6443", "token-b", ca)) }, 2, "token-b", ""},
		{"the CA file it names", func() { write(ca, "second CA") }, 3, "token-b", ""},
		{"half written", func() { write(path, "clusters: [{") }, 3, "token-b", "read the kubeconfig"},
		{"written whole", func() { write(path, kubeconfig("https://b.example:6443", "token-c", ca)) }, 4, "token-c", ""},
	}
	for _, s := range steps {
		s.change()
		cfg, gen, err := l.Config()
		if cfg == nil || gen != s.wantGen || cfg.BearerToken != s.wantToken || cfg.Timeout != 3*time.Second {
			t.Fatalf("%s: generation %d, config %+v; want generation %d with token %s", s.name, gen, cfg, s.wantGen, s.wantToken)
		}
		if (err == nil) != (s.wantErr == "") || (err != nil && !strings.Contains(err.Error(), s.wantErr)) {
			t.Fatalf("%s: error %v, want %q", s.name, err, s.wantErr)
		}
	}
	if len(changes) != 3 {
		t.Fatalf("OnChange called %d times, want 3 (not for the first read): %v", len(changes), changes)
	}
	if got := strings.Join(changes[0], ","); got != path+","+ca {
		t.Errorf("OnChange told %s, want the kubeconfig and the CA it names", got)
	}
}

// TestLoaderWithoutKubeconfig: a kubeconfig that does not exist is no
// configuration, and Open says why in one line.
func TestLoaderWithoutKubeconfig(t *testing.T) {
	l := NewLoader(Options{Kubeconfig: filepath.Join(t.TempDir(), "absent")})
	if cfg, _, err := l.Config(); cfg != nil || err == nil {
		t.Fatalf("config %v, error %v; want none and an error", cfg, err)
	}
	view, why := l.Open()
	if view != nil || !strings.HasPrefix(why, "no usable kubeconfig: ") || strings.Contains(why, "\n") {
		t.Fatalf("Open: %v %q, want no view and one line saying why", view, why)
	}
}
