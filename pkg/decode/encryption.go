package decode

import (
	"bytes"
	"fmt"
	"unicode"
)

// Encryption describes the encryption-at-rest prefix of a value.
type Encryption struct {
	// Provider is the EncryptionConfiguration provider: aescbc, aesgcm, secretbox, kms.
	Provider string `json:"provider"`
	// Version is the provider's format version, such as v1 or v2.
	Version string `json:"version"`
	// KeyName is the key (or KMS plugin) name from the EncryptionConfiguration.
	KeyName string `json:"keyName"`
}

// String renders the prefix the way it is written in etcd, without the ciphertext.
func (e Encryption) String() string {
	return fmt.Sprintf("k8s:enc:%s:%s:%s:", e.Provider, e.Version, e.KeyName)
}

// maxPrefixField bounds each prefix field so garbage after "k8s:enc:" is not
// mistaken for a key name.
const maxPrefixField = 253

// ParseEncryption reads the "k8s:enc:<provider>:<version>:<keyname>:" prefix of
// value. It returns the prefix, the ciphertext after it and an error when the
// value is not encrypted or its prefix is malformed.
func ParseEncryption(value []byte) (Encryption, []byte, error) {
	if !bytes.HasPrefix(value, encryptedMagic) {
		return Encryption{}, nil, fmt.Errorf("value has no %q prefix", encryptedMagic)
	}
	rest := value[len(encryptedMagic):]
	var fields [3]string
	for i := range fields {
		end := bytes.IndexByte(rest, ':')
		if end <= 0 || end > maxPrefixField {
			return Encryption{}, nil, fmt.Errorf("malformed encryption prefix: field %d of provider:version:key is missing", i+1)
		}
		f := string(rest[:end])
		for _, r := range f {
			if r > unicode.MaxASCII || !unicode.IsPrint(r) {
				return Encryption{}, nil, fmt.Errorf("malformed encryption prefix: field %d is not printable ASCII", i+1)
			}
		}
		fields[i] = f
		rest = rest[end+1:]
	}
	return Encryption{Provider: fields[0], Version: fields[1], KeyName: fields[2]}, rest, nil
}
