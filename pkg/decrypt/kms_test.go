package decrypt

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
