package render

import (
	"strings"
	"testing"

	"github.com/regghost/regghost/pkg/etcdscan"
)

// TestVersionsKeys: with the encryption configuration, versions says what
// each key holds and whether it writes now, a KMS v2 plugin's key IDs each
// a key; a plugin that did not say its key ID leaves them "not known" and
// says why; without the configuration no key table is printed.
func TestVersionsKeys(t *testing.T) {
	for _, tc := range []struct {
		name     string
		versions []etcdscan.StoredVersions
		want     []string
		not      []string
	}{
		{"rotated inside the plugin", []etcdscan.StoredVersions{{Resource: "secrets", Stored: map[string]int{"v1": 3},
			Keys:   map[string]int{"kms v2/vault (key ID 1)": 2, "kms v2/vault (key ID 2)": 1, "kms v2/vault (key ID unreadable)": 1},
			Writer: "kms v2/vault", WriterKeyID: "2"}, {Resource: "configmaps", Stored: map[string]int{"v1": 3}, Keys: map[string]int{"identity": 3}, Writer: "identity"}},
			[]string{"ENCRYPTED WITH", "kms v2/vault (key ID 1)           2        no: regghost migrate moves them",
				"kms v2/vault (key ID 2)           1        yes", "kms v2/vault (key ID unreadable)  1        not known"}, []string{"configmaps  identity"}},
		{"the plugin did not answer", []etcdscan.StoredVersions{{Resource: "secrets", Stored: map[string]int{"v1": 2},
			Keys: map[string]int{"kms v2/vault (key ID 1)": 1, "aescbc/key1": 1}, Writer: "kms v2/vault", WriterKeyIDUnknown: "connect to KMS plugin"}},
			[]string{"aescbc/key1              1        no", "kms v2/vault (key ID 1)  1        not known",
				"secrets: kms v2/vault writes them; which of its key IDs it writes with is not known: connect to KMS plugin."}, nil},
		{"no configuration", []etcdscan.StoredVersions{{Resource: "secrets", Stored: map[string]int{"v1": 1}, Keys: map[string]int{"aescbc/key1": 1}}},
			nil, []string{"ENCRYPTED WITH"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := writeVersions(&b, &etcdscan.Report{Versions: tc.versions}, nil); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("lacks %q:\n%s", w, b.String())
				}
			}
			for _, n := range tc.not {
				if strings.Contains(b.String(), n) {
					t.Errorf("says %q:\n%s", n, b.String())
				}
			}
		})
	}
}
