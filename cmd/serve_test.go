package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeRefusesBadInput: bad flags and a bad web config are refused in
// one line with the usage exit code, before anything listens or connects.
func TestServeRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	badYAML := filepath.Join(dir, "bad.yml")
	if err := os.WriteFile(badYAML, []byte("tls_server_config: [oops\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	unknownField := filepath.Join(dir, "unknown.yml")
	if err := os.WriteFile(unknownField, []byte("basic_auth: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missingCert := filepath.Join(dir, "tls.yml")
	if err := os.WriteFile(missingCert, []byte("tls_server_config:\n  cert_file: /nonexistent.crt\n  key_file: /nonexistent.key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	basicAuth := filepath.Join(dir, "basic.yml")
	if err := os.WriteFile(basicAuth, []byte("basic_auth_users:\n  prometheus: $2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	badKubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(badKubeconfig, []byte("clusters: [oops\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"web config missing", []string{"--web-config-file", filepath.Join(dir, "none.yml")}, "--web-config-file"},
		{"web config not YAML", []string{"--web-config-file", badYAML}, "--web-config-file"},
		{"web config unknown field", []string{"--web-config-file", unknownField}, "--web-config-file"},
		{"web config TLS files missing", []string{"--web-config-file", missingCert}, "--web-config-file"},
		{"interval zero", []string{"--interval", "0s"}, "--interval must be positive"},
		{"jitter one", []string{"--jitter", "1"}, "--jitter"},
		{"negative namespace limit", []string{"--namespace-label-limit", "-1"}, "--namespace-label-limit"},
		{"db file", []string{"--db", filepath.Join(dir, "x.db")}, "serve watches a live etcd"},
		{"page size", []string{"--page-size", "0"}, "--page-size"},
		{"argument", []string{"extra"}, "unknown command"},
		{"metrics auth unknown", []string{"--metrics-auth", "tls"}, `--metrics-auth must be "delegated" or "none"`},
		{"delegated without the API server", []string{"--metrics-auth", "delegated", "--no-api"}, "cannot go with --no-api"},
		{"delegated and basic auth", []string{"--metrics-auth", "delegated", "--web-config-file", basicAuth}, "sets basic_auth_users"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := Run(append([]string{"serve", "--listen-address", "127.0.0.1:0"}, tt.args...), strings.NewReader(""), &out, &errOut)
			if code != ExitUsage && !(tt.name == "argument" && code != 0) {
				t.Errorf("exit %d, want %d; stderr: %s", code, ExitUsage, errOut.String())
			}
			lines := strings.Split(strings.TrimSpace(errOut.String()), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], tt.want) {
				t.Errorf("stderr %q, want one line with %q", errOut.String(), tt.want)
			}
		})
	}
}
