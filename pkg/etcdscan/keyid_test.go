package etcdscan

import "testing"

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
