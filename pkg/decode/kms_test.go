package decode

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
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
		{"envelope cut in its ciphertext", "k8s:enc:kms:v2:vault:" + env("7")[:2], "", "read the KMS v2 envelope"},
		{"key ID not UTF-8", "k8s:enc:kms:v2:vault:" + string(protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), []byte("\xff"))), "", "not UTF-8"},
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

// BenchmarkKMSKeyID is what the census pays per KMS v2 value to name its
// key ID (a Secret-sized envelope): nothing is decrypted.
func BenchmarkKMSKeyID(b *testing.B) {
	env, err := proto.Marshal(&kmstypes.EncryptedObject{EncryptedData: make([]byte, 4096), KeyID: "projects/p/locations/l/keyRings/r/cryptoKeys/k/cryptoKeyVersions/7",
		EncryptedDEKSource: make([]byte, 256), Annotations: map[string][]byte{"kms.kubernetes.io/key": make([]byte, 64)}})
	if err != nil {
		b.Fatal(err)
	}
	value := append([]byte("k8s:enc:kms:v2:vault:"), env...)
	b.SetBytes(int64(len(value)))
	for b.Loop() {
		if _, err := KMSKeyID(value); err != nil {
			b.Fatal(err)
		}
	}
}
