package decode

import (
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
