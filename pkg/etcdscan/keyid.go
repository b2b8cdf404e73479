package etcdscan

import (
	"strings"

	"github.com/regghost/regghost/pkg/decode"
)

// keyIDMark separates a KMS v2 plugin's name from the key ID a value was
// encrypted under: "kms v2/vault (key ID 7)".
const keyIDMark = " (key ID "

// WithKeyID names a KMS v2 plugin's key ID as StoredWith names the plugin:
// "kms v2/vault (key ID 7)".
func WithKeyID(plugin, keyID string) string {
	return plugin + keyIDMark + keyID + ")"
}

// Plugin is the provider and key name without a KMS v2 key ID
// ("kms v2/vault" for "kms v2/vault (key ID 7)"); any other name as it is.
func Plugin(name string) string {
	if i := strings.Index(name, keyIDMark); i >= 0 && strings.HasSuffix(name, ")") {
		return name[:i]
	}
	return name
}

// KeyIDOf is the KMS v2 key ID a name made by WithKeyID holds ("" for any
// other name).
func KeyIDOf(name string) string {
	if i := strings.Index(name, keyIDMark); i >= 0 && strings.HasSuffix(name, ")") {
		return name[i+len(keyIDMark) : len(name)-1]
	}
	return ""
}

// otherKeyIDs ends the name of a KMS v2 plugin's key IDs counted together.
const otherKeyIDs = " (other key IDs)"

// OtherKeyIDs names the key IDs of a KMS v2 plugin counted together, but
// for those named on their own: "kms v2/vault (other key IDs)".
func OtherKeyIDs(plugin string) string { return plugin + otherKeyIDs }

// UnreadableKeyID stands for the key ID of a KMS v2 envelope that does not
// read.
const UnreadableKeyID = "unreadable"

// KeyNameOf names how value is stored as KeyName does, and for a KMS v2
// value the key ID its envelope names in the clear ("kms v2/vault (key ID
// 7)"; UnreadableKeyID for an envelope that does not read). Nothing is
// decrypted.
func KeyNameOf(enc *decode.Encryption, value []byte) string {
	name := KeyName(enc)
	if enc == nil || enc.Provider != "kms" || enc.Version != "v2" {
		return name
	}
	name, _ = WithKeyIDOf(name, value)
	return name
}

// WithKeyIDOf names plugin with the key ID KMS v2 value's envelope names;
// an envelope that does not read is named with UnreadableKeyID, and why.
func WithKeyIDOf(plugin string, value []byte) (string, error) {
	id, err := decode.KMSKeyID(value)
	if err != nil {
		return WithKeyID(plugin, UnreadableKeyID), err
	}
	return WithKeyID(plugin, id), nil
}
