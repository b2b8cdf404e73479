// Package decode turns raw etcd values written by kube-apiserver into objects.
//
// It understands the four shapes a value can take in etcd: the protobuf
// envelope ("k8s\x00" followed by a runtime.Unknown), JSON (custom resources
// and old objects), CBOR (custom resources on clusters with
// CBORServingAndStorage) and encryption-at-rest ("k8s:enc:<provider>:<v>:<key>:").
// Damaged input is expected: every function returns an error instead of
// panicking, and the raw bytes are never re-encoded.
package decode

import "bytes"

// Format is the storage encoding of a value.
type Format string

// The formats a value can be stored in.
const (
	FormatProtobuf  Format = "protobuf"
	FormatJSON      Format = "json"
	FormatCBOR      Format = "cbor"
	FormatEncrypted Format = "encrypted"
	FormatUnknown   Format = "unknown"
)

var (
	protobufMagic  = []byte("k8s\x00")
	encryptedMagic = []byte("k8s:enc:")
	// cborSelfDescribed is the CBOR self-described tag (55799) that
	// kube-apiserver writes in front of every CBOR value.
	cborSelfDescribed = []byte{0xd9, 0xd9, 0xf7}
)

// Detect reports the storage format of value from its first bytes only.
func Detect(value []byte) Format {
	switch {
	case bytes.HasPrefix(value, protobufMagic):
		return FormatProtobuf
	case bytes.HasPrefix(value, encryptedMagic):
		return FormatEncrypted
	case bytes.HasPrefix(value, cborSelfDescribed):
		return FormatCBOR
	}
	trimmed := bytes.TrimLeft(value, " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '{' {
		return FormatJSON
	}
	return FormatUnknown
}
