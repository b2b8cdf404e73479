package decrypt

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	kmstypes "k8s.io/apiserver/pkg/storage/value/encrypt/envelope/kmsv2/v2"
)

// TestKMSKeyID reads the key ID of a KMS v2 envelope, and refuses what is
// not one.
func TestKMSKeyID(t *testing.T) {
	env := func(keyID string) string {
		b, err := proto.Marshal(&kmstypes.EncryptedObject{EncryptedData: []byte("c"), KeyID: keyID, EncryptedDEKSource: []byte("d")})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, tc := range []struct {
		name, value, want, err string
	}{
		{"v2", "k8s:enc:kms:v2:vault:" + env("projects/p/keys/k/versions/7"), "projects/p/keys/k/versions/7", ""},
		{"no key ID", "k8s:enc:kms:v2:vault:" + env(""), "", "names no key ID"},
		{"torn envelope", "k8s:enc:kms:v2:vault:\xff\xff", "", "read the KMS v2 envelope"},
		{"kms v1", "k8s:enc:kms:v1:vault:abc", "", "not a KMS v2 plugin"},
		{"aescbc", "k8s:enc:aescbc:v1:key1:abc", "", "not a KMS v2 plugin"},
		{"plaintext", "k8s\x00abc", "", "no"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := KMSKeyID([]byte(tc.value))
			if got != tc.want || (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("KMSKeyID = %q, %v; want %q, %q", got, err, tc.want, tc.err)
			}
		})
	}
}

// TestKeyIDNames: a name with a key ID splits back into its plugin and key
// ID; any other name is its own plugin.
func TestKeyIDNames(t *testing.T) {
	for _, tc := range []struct{ name, plugin, keyID string }{
		{WithKeyID("kms v2/vault", "7"), "kms v2/vault", "7"},
		{WithKeyID("kms v2/vault", "a (b)"), "kms v2/vault", "a (b)"},
		{"kms v2/vault", "kms v2/vault", ""},
		{"aescbc/key1", "aescbc/key1", ""},
	} {
		if p, id := Plugin(tc.name), KeyIDOf(tc.name); p != tc.plugin || id != tc.keyID {
			t.Errorf("%q: plugin %q key ID %q, want %q %q", tc.name, p, id, tc.plugin, tc.keyID)
		}
	}
}

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
