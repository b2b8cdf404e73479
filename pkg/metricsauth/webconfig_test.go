package metricsauth

import (
	"os"
	"path/filepath"
	"testing"
)

// TestReadWebConfig: basic auth and TLS are told apart; an unreadable or
// malformed file is an error.
func TestReadWebConfig(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		name, content string
		want          WebConfig
	}{
		{"empty", "", WebConfig{}},
		{"TLS files", "tls_server_config:\n  cert_file: a.crt\n  key_file: a.key\n", WebConfig{TLS: true}},
		{"TLS inline", "tls_server_config:\n  cert: x\n  key: y\n", WebConfig{TLS: true}},
		{"TLS section without a certificate", "tls_server_config: {}\n", WebConfig{}},
		{"basic auth", "basic_auth_users:\n  p: $2y$10$x\n", WebConfig{BasicAuth: true}},
		{"both", "basic_auth_users:\n  p: $2y$10$x\ntls_server_config:\n  cert_file: a.crt\n", WebConfig{BasicAuth: true, TLS: true}},
	} {
		path := filepath.Join(dir, tt.name+".yml")
		if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
			t.Fatal(err)
		}
		if got, err := ReadWebConfig(path); err != nil || got != tt.want {
			t.Errorf("%s: %+v, %v; want %+v", tt.name, got, err, tt.want)
		}
	}
	if _, err := ReadWebConfig(filepath.Join(dir, "absent.yml")); err == nil {
		t.Errorf("an absent file read without error")
	}
	bad := filepath.Join(dir, "bad.yml")
	if err := os.WriteFile(bad, []byte("tls_server_config: [oops\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadWebConfig(bad); err == nil {
		t.Errorf("malformed YAML read without error")
	}
}
