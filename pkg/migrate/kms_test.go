package migrate

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/decrypt"
)

// TestCensusOfKMSValues: a value under a KMS provider the configuration
// still lists but that no longer writes is rewritten (the API server reads
// it through its plugin); one under the writer is where it should be; one
// under a provider the configuration does not list is named with its way
// out. None is decrypted here.
func TestCensusOfKMSValues(t *testing.T) {
	ctx := context.Background()
	sock := "unix://" + filepath.Join(t.TempDir(), "kms.sock")
	p := filepath.Join(t.TempDir(), "enc.yaml")
	cfg := `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [secrets]
    providers:
      - kms: {apiVersion: v2, name: new, endpoint: "` + sock + `", timeout: 1s}
      - kms: {apiVersion: v2, name: old, endpoint: "` + sock + `", timeout: 1s}
      - identity: {}
`
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := decrypt.Load(ctx, p)
	if err != nil {
		t.Fatalf("kms v2 configuration: %v", err)
	}
	cli, _ := etcdtest.Start(t)
	put(t, cli, reg+"secrets/ns/old", "k8s:enc:kms:v2:old:\x0a\x03abc",
		reg+"secrets/ns/new", "k8s:enc:kms:v2:new:\x0a\x03abc",
		reg+"secrets/ns/gone", "k8s:enc:kms:v2:gone:\x0a\x03abc")
	c := census(t, cli, "secrets", d)
	if c.Writer != "kms v2/new" || c.NotChecked != 3 || len(c.Rewrite) != 1 || c.Rewrite[0].Name != "old" || len(c.Unreadable) != 1 || c.Unreadable[0].Name != "gone" {
		t.Errorf("census: writer %q, not checked %d, rewrite %+v, unreadable %+v", c.Writer, c.NotChecked, c.Rewrite, c.Unreadable)
	}
}
