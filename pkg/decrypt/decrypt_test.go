package decrypt

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/storage/value"
)

const key32 = "c2VjcmV0IGlzIHNlY3VyZSwgb3IgaXMgaXQ/IDEyMzQ="

func write(t *testing.T, provider, keyName string) string {
	t.Helper()
	cfg := `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [secrets, "*.example.com"]
    providers:
      - ` + provider + `:
          keys:
            - name: ` + keyName + `
              secret: ` + key32 + `
      - identity: {}
`
	p := filepath.Join(t.TempDir(), "enc.yaml")
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// encrypt uses kube-apiserver's own transformer to write a value the way it stores it.
func encrypt(t *testing.T, d *Decrypter, gr schema.GroupResource, key string, plain []byte) []byte {
	t.Helper()
	tr, ok := d.transformer(gr)
	if !ok {
		t.Fatalf("no transformer for %s", gr)
	}
	out, err := tr.TransformToStorage(context.Background(), plain, value.DefaultContext(key))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestDecrypt(t *testing.T) {
	ctx := context.Background()
	secrets := schema.GroupResource{Resource: "secrets"}
	widgets := schema.GroupResource{Group: "example.com", Resource: "widgets"}
	plain := []byte("k8s\x00\x0a\x02v1\x12\x06Secret")
	for _, provider := range []string{"aescbc", "aesgcm", "secretbox"} {
		t.Run(provider, func(t *testing.T) {
			d, err := Load(ctx, write(t, provider, "k1"))
			if err != nil {
				t.Fatal(err)
			}
			for _, gr := range []schema.GroupResource{secrets, widgets} {
				key := "/registry/" + gr.Resource + "/ns/x"
				stored := encrypt(t, d, gr, key, plain)
				if !bytes.HasPrefix(stored, []byte("k8s:enc:"+provider+":v1:k1:")) {
					t.Fatalf("stored value %q", stored[:20])
				}
				got, err := d.Decrypt(ctx, key, gr, stored)
				if err != nil || !bytes.Equal(got, plain) {
					t.Errorf("%s: got %q, %v", gr, got, err)
				}
			}
			// Another key name (a rotated-out key) does not decrypt.
			other, err := Load(ctx, write(t, provider, "k2"))
			if err != nil {
				t.Fatal(err)
			}
			stored := encrypt(t, other, secrets, "/registry/secrets/ns/x", plain)
			if _, err := d.Decrypt(ctx, "/registry/secrets/ns/x", secrets, stored); err == nil {
				t.Error("a value of another key decrypted")
			}
		})
	}
	d, err := Load(ctx, write(t, "aescbc", "k1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Decrypt(ctx, "/registry/secrets/ns/x", secrets, []byte("k8s:enc:kms:v2:vault:\x0a\x01")); err == nil || !strings.Contains(err.Error(), "cannot be decrypted offline") {
		t.Errorf("kms: %v", err)
	}
	if _, err := d.Decrypt(ctx, "/registry/configmaps/ns/x", schema.GroupResource{Resource: "configmaps"}, []byte("k8s:enc:aescbc:v1:k1:xx")); err == nil {
		t.Error("a resource without encryption was decrypted")
	}
	if _, err := Load(ctx, filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Error("missing config loaded")
	}
}

// TestReadable: what kube-apiserver running a config can read as stored.
func TestReadable(t *testing.T) {
	ctx := context.Background()
	secrets := schema.GroupResource{Resource: "secrets"}
	configmaps := schema.GroupResource{Resource: "configmaps"}
	plain := []byte("k8s\x00\x0a\x02v1\x12\x06Secret")
	k1, err := Load(ctx, write(t, "aescbc", "k1"))
	if err != nil {
		t.Fatal(err)
	}
	k2, err := Load(ctx, write(t, "aescbc", "k2"))
	if err != nil {
		t.Fatal(err)
	}
	noIdentity := filepath.Join(t.TempDir(), "enc.yaml")
	cfg := "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n  - resources: [secrets]\n    providers:\n      - aescbc:\n          keys:\n            - name: k1\n              secret: " + key32 + "\n"
	if err := os.WriteFile(noIdentity, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	strict, err := Load(ctx, noIdentity)
	if err != nil {
		t.Fatal(err)
	}
	byK1 := encrypt(t, k1, secrets, "/registry/secrets/ns/x", plain)
	tests := []struct {
		name    string
		d       *Decrypter
		gr      schema.GroupResource
		value   []byte
		wantErr string
	}{
		{"its key is held", k1, secrets, byK1, ""},
		{"its key was rotated out", k2, secrets, byK1, `does not hold aescbc key "k1"`},
		{"plaintext with identity", k1, secrets, plain, ""},
		{"plaintext without identity", strict, secrets, plain, "without the identity provider"},
		{"a resource the config does not cover", k1, configmaps, plain, ""},
		{"encrypted, but the config does not cover it", k1, configmaps, byK1, "configures no encryption for configmaps"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.d.Readable(ctx, "/registry/"+tc.gr.Resource+"/ns/x", tc.gr, tc.value)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("err %v, want %q", err, tc.wantErr)
			}
		})
	}
}
