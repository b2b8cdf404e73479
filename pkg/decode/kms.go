package decode

import (
	"fmt"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	kmstypes "k8s.io/apiserver/pkg/storage/value/encrypt/envelope/kmsv2/v2"
)

// KMSKeyID reads the key ID a KMS v2 value was encrypted under: the
// plugin's key ID that kube-apiserver writes, in the clear, in the value's
// EncryptedObject next to the ciphertext. Nothing is decrypted.
func KMSKeyID(data []byte) (string, error) {
	enc, rest, err := ParseEncryption(data)
	if err != nil {
		return "", fmt.Errorf("read the key ID: %w", err)
	}
	if enc.Provider != "kms" || enc.Version != "v2" {
		return "", fmt.Errorf("encrypted with %s %s key %q, not a KMS v2 plugin", enc.Provider, enc.Version, enc.KeyName)
	}
	id, err := envelopeKeyID(rest)
	if err != nil {
		return "", fmt.Errorf("read the KMS v2 envelope of plugin %q: %w", enc.KeyName, err)
	}
	if id == "" {
		return "", fmt.Errorf("the KMS v2 envelope of plugin %q names no key ID", enc.KeyName)
	}
	return id, nil
}

// keyIDField is the field number of keyID in kube-apiserver's
// EncryptedObject (k8s.io/kms/apis/v2's api.proto).
var keyIDField = (&kmstypes.EncryptedObject{}).ProtoReflect().Descriptor().Fields().ByName("keyID").Number()

// envelopeKeyID reads the keyID field of an EncryptedObject, the last one
// as proto does, and skips every other field unread: the ciphertext is
// not copied, as a whole proto.Unmarshal would.
func envelopeKeyID(b []byte) (string, error) {
	id := ""
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return "", protowire.ParseError(n)
		}
		b = b[n:]
		if num == keyIDField && typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return "", protowire.ParseError(m)
			}
			if !utf8.Valid(v) {
				return "", fmt.Errorf("its key ID is not UTF-8")
			}
			id, b = string(v), b[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return "", protowire.ParseError(m)
		}
		b = b[m:]
	}
	return id, nil
}
