package decrypt

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func writeConfig(t *testing.T, cfg string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "enc.yaml")
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestWriterAndStale: the provider and key that write are the first of the
// first entry naming the resource (then *.group, then *.*), and a value is
// stale exactly when it is not under them, plaintext included.
func TestWriterAndStale(t *testing.T) {
	ctx := context.Background()
	rotated := writeConfig(t, `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [secrets]
    providers:
      - aescbc:
          keys:
            - {name: key2, secret: `+key32+`}
            - {name: key1, secret: `+key32+`}
      - identity: {}
  - resources: ["*.example.com"]
    providers:
      - identity: {}
      - aesgcm:
          keys:
            - {name: old, secret: `+key32+`}
`)
	d, err := Load(ctx, rotated)
	if err != nil {
		t.Fatal(err)
	}
	old1 := writeConfig(t, `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [secrets]
    providers:
      - aescbc:
          keys:
            - {name: key1, secret: `+key32+`}
  - resources: ["*.example.com"]
    providers:
      - aesgcm:
          keys:
            - {name: old, secret: `+key32+`}
`)
	before, err := Load(ctx, old1)
	if err != nil {
		t.Fatal(err)
	}
	secrets := schema.GroupResource{Resource: "secrets"}
	if got := fmt.Sprint(d.Readers(secrets)); got != "[aescbc/key2 aescbc/key1 identity]" {
		t.Errorf("Readers(secrets) = %s", got)
	}
	widgets := schema.GroupResource{Group: "example.com", Resource: "widgets"}
	configmaps := schema.GroupResource{Resource: "configmaps"}
	plain := []byte("k8s\x00\x0a\x02v1\x12\x06Secret")
	for _, tc := range []struct {
		name      string
		gr        schema.GroupResource
		value     []byte
		writer    string
		with      string
		stale     bool
		unreadble bool
	}{
		{"old key", secrets, encrypt(t, before, secrets, "/registry/secrets/ns/a", plain), "aescbc/key2", "aescbc/key1", true, false},
		{"write key", secrets, encrypt(t, d, secrets, "/registry/secrets/ns/a", plain), "aescbc/key2", "aescbc/key2", false, false},
		{"plaintext where encrypted", secrets, plain, "aescbc/key2", Identity, true, false},
		{"decrypting back to plaintext", widgets, encrypt(t, before, widgets, "/registry/secrets/ns/a", plain), Identity, "aesgcm/old", true, false},
		{"plaintext, identity first", widgets, plain, Identity, Identity, false, false},
		{"not configured", configmaps, plain, Identity, Identity, false, false},
		{"encrypted, not configured", configmaps, encrypt(t, d, secrets, "/registry/secrets/ns/a", plain), Identity, "aescbc/key2", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := d.Writer(tc.gr); got != tc.writer {
				t.Errorf("Writer(%s) = %q, want %q", tc.gr, got, tc.writer)
			}
			if got := d.Readers(tc.gr); got[0] != tc.writer {
				t.Errorf("Readers(%s) = %v, the first is not the writer %q", tc.gr, got, tc.writer)
			}
			if got := StoredWith(tc.value); got != tc.with {
				t.Errorf("StoredWith = %q, want %q", got, tc.with)
			}
			_, stale, err := d.Open(ctx, "/registry/secrets/ns/a", tc.gr, tc.value)
			if (err != nil) != tc.unreadble || stale != tc.stale {
				t.Errorf("Open: stale %v, err %v; want stale %v, unreadable %v", stale, err, tc.stale, tc.unreadble)
			}
		})
	}
}
