package decrypt

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiserverv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
)

// TestSameEndpoint: plugins at one endpoint serve one KMS, whatever their
// names; another endpoint is another KMS.
func TestSameEndpoint(t *testing.T) {
	p := filepath.Join(t.TempDir(), "enc.yaml")
	cfg := `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [secrets]
    providers:
      - kms: {apiVersion: v2, name: vault-secrets, endpoint: "unix:///run/vault.sock"}
  - resources: [configmaps]
    providers:
      - kms: {apiVersion: v2, name: vault-cm, endpoint: "unix:///run/vault.sock"}
  - resources: [widgets.example.com]
    providers:
      - kms: {apiVersion: v2, name: aws, endpoint: "unix:///run/aws.sock"}
`
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := Load(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(d.SameEndpoint("kms v2/vault-secrets"), ","); got != "kms v2/vault-cm,kms v2/vault-secrets" {
		t.Errorf("same endpoint: %s", got)
	}
	if got := d.SameEndpoint("kms v2/nope"); got != nil {
		t.Errorf("unknown plugin: %v", got)
	}
}

// TestSocketUnderRoot: a KMS plugin's unix socket is looked for under the
// node root, as the configuration is, and its absence is said at once;
// an abstract socket or another scheme is dialled as written.
func TestSocketUnderRoot(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "run/kms"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "run/kms/plugin.sock"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	d := &Decrypter{Root: root}
	for _, tc := range []struct{ endpoint, want, err string }{
		{"unix:///run/kms/plugin.sock", "unix://" + filepath.Join(root, "run/kms/plugin.sock"), ""},
		{"unix:///run/kms/gone.sock", "", "has no socket here"},
		{"unix:/run/kms/plugin.sock", "unix://" + filepath.Join(root, "run/kms/plugin.sock"), ""},
		{"unix:///@kms", "unix:///@kms", ""},
		{"tcp://127.0.0.1:1", "", "unsupported scheme"},
	} {
		got, err := d.socket(&apiserverv1.KMSConfiguration{Name: "vault", Endpoint: tc.endpoint})
		if got != tc.want || (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: %q, %v; want %q, %q", tc.endpoint, got, err, tc.want, tc.err)
		}
	}
}
