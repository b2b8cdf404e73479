package decode

import (
	"fmt"

	"google.golang.org/protobuf/proto"
	kmstypes "k8s.io/apiserver/pkg/storage/value/encrypt/envelope/kmsv2/v2"
)

// KMSKeyID reads the key ID a KMS v2 value was encrypted under: the
// plugin's key ID that kube-apiserver writes, in the clear, in the value's
// EncryptedObject next to the ciphertext. Nothing is decrypted.
func KMSKeyID(data []byte) (string, error) {
	enc, rest, err := ParseEncryption(data)
	if err != nil {
		return "", err
	}
	if enc.Provider != "kms" || enc.Version != "v2" {
		return "", fmt.Errorf("encrypted with %s %s key %q, not a KMS v2 plugin", enc.Provider, enc.Version, enc.KeyName)
	}
	var o kmstypes.EncryptedObject
	if err := proto.Unmarshal(rest, &o); err != nil {
		return "", fmt.Errorf("read the KMS v2 envelope of plugin %q: %w", enc.KeyName, err)
	}
	if o.KeyID == "" {
		return "", fmt.Errorf("the KMS v2 envelope of plugin %q names no key ID", enc.KeyName)
	}
	return o.KeyID, nil
}
