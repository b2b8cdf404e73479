package etcdscan

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kmstypes "k8s.io/apiserver/pkg/storage/value/encrypt/envelope/kmsv2/v2"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/decode"
)

func TestCRDVersionProblem(t *testing.T) {
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "gadgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "example.com", Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
			{Name: "v1beta1", Served: false}, {Name: "v1", Served: true}, {Name: "v2", Served: true, Storage: true}}},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{StoredVersions: []string{"v1beta1", "v2"}}}
	tests := []struct {
		version string
		want    string
	}{
		{"v2", ""},
		{"v0", "`regghost migrate gadgets.example.com --confirm` lists v0 again (served: false, storage: false) for the run, rewrites every object to v2"},
		{"v1beta1", "lists but no longer serves"},
		{"v1", "missing from CustomResourceDefinition gadgets.example.com's status.storedVersions [v1beta1, v2]"},
	}
	for _, tt := range tests {
		got := crdVersionProblem(crd, tt.version, "gadgets.example.com")
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("%s: %q, want %q", tt.version, got, tt.want)
		}
	}
}

// plainKeys is a decrypter whose "ciphertext" is the plaintext after the
// prefix, and that says which key writes: enough to count keys.
type plainKeys struct{ writer string }

func (p plainKeys) Decrypt(_ context.Context, _ string, _ schema.GroupResource, data []byte) ([]byte, error) {
	_, rest, err := decode.ParseEncryption(data)
	return rest, err
}

func (p plainKeys) Writer(schema.GroupResource) string { return p.writer }

// TestCensusCountsKeys: every value is counted by its encryption provider
// and key (identity for plaintext), and the key that writes the resource is
// named when the decrypter says it.
func TestCensusCountsKeys(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	ctx := context.Background()
	secret := func(name string) string {
		return etcdtest.Encode(t, &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}})
	}
	for k, v := range map[string]string{
		"/registry/namespaces/default": etcdtest.Encode(t, &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: "default"}}),
		"/registry/secrets/default/a":  "k8s:enc:aescbc:v1:key1:" + secret("a"),
		"/registry/secrets/default/b":  "k8s:enc:aescbc:v1:key2:" + secret("b"),
		"/registry/secrets/default/c":  secret("c"),
	} {
		if _, err := cli.Put(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	store, err := NewEtcdStore(ctx, cli, 10)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Scan(ctx, store, Options{Decrypter: plainKeys{writer: "aescbc/key2"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range rep.Versions {
		if v.Resource != "secrets" {
			continue
		}
		if fmt.Sprint(v.Keys) != "map[aescbc/key1:1 aescbc/key2:1 identity:1]" || v.Writer != "aescbc/key2" || v.Stored["v1"] != 3 {
			t.Errorf("secrets census %+v", v)
		}
		return
	}
	t.Errorf("no census of secrets: %+v", rep.Versions)
}

// kmsKeys is a decrypter whose KMS v2 plugin writes and says its key ID
// (an error: it does not answer).
type kmsKeys struct {
	plainKeys
	keyID string
	err   error
}

func (k kmsKeys) CurrentKeyID(context.Context, string) (string, error) { return k.keyID, k.err }

// TestCensusCountsKMSKeyIDs: KMS v2 values are counted by the key ID their
// envelope names, a torn envelope as unreadable; the writer is named with
// the key ID its plugin says, and a plugin that does not answer leaves the
// writer without one, with why.
func TestCensusCountsKMSKeyIDs(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	ctx := context.Background()
	env := func(keyID string) string {
		b, err := proto.Marshal(&kmstypes.EncryptedObject{EncryptedData: []byte("c"), KeyID: keyID, EncryptedDEKSource: []byte("d")})
		if err != nil {
			t.Fatal(err)
		}
		return "k8s:enc:kms:v2:vault:" + string(b)
	}
	for k, v := range map[string]string{
		"/registry/namespaces/default": etcdtest.Encode(t, &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: "default"}}),
		"/registry/secrets/default/a":  env("1"),
		"/registry/secrets/default/b":  env("2"),
		"/registry/secrets/default/c":  env("2"),
		"/registry/secrets/default/d":  "k8s:enc:kms:v2:vault:\xff\xff",
	} {
		if _, err := cli.Put(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	store, err := NewEtcdStore(ctx, cli, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name              string
		dec               kmsKeys
		ask               bool
		keyID, whyNoKeyID string
	}{
		{"the plugin answers", kmsKeys{plainKeys{"kms v2/vault"}, "2", nil}, true, "2", ""},
		{"the plugin is down", kmsKeys{plainKeys{"kms v2/vault"}, "", errors.New("connect to KMS plugin")}, true, "", "connect to KMS plugin"},
		{"not asked (scan, purge, offline)", kmsKeys{plainKeys{"kms v2/vault"}, "2", nil}, false, "", "the KMS plugin was not asked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Scan(ctx, store, Options{Decrypter: tc.dec, KMSKeyIDs: tc.ask})
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(rep.Versions, func(v StoredVersions) bool { return v.Resource == "secrets" })
			if i < 0 {
				t.Fatalf("no census of secrets: %+v", rep.Versions)
			}
			v := rep.Versions[i]
			if got := fmt.Sprint(v.Keys); got != "map[kms v2/vault (key ID 1):1 kms v2/vault (key ID 2):2 kms v2/vault (key ID unreadable):1]" {
				t.Errorf("keys %s", got)
			}
			if v.Writer != "kms v2/vault" || v.WriterKeyID != tc.keyID || !strings.HasPrefix(v.WriterKeyIDUnknown, tc.whyNoKeyID) || (tc.whyNoKeyID == "") != (v.WriterKeyIDUnknown == "") {
				t.Errorf("writer %q key ID %q (unknown: %q), want key ID %q (%q)", v.Writer, v.WriterKeyID, v.WriterKeyIDUnknown, tc.keyID, tc.whyNoKeyID)
			}
			i = slices.IndexFunc(rep.Checks, func(c Check) bool { return c.Name == "kms key IDs" })
			if asked := i >= 0; asked != tc.ask || (asked && rep.Checks[i].Done != (tc.keyID != "")) {
				t.Errorf("checks %+v", rep.Checks)
			}
			for k, want := range map[string]string{"kms v2/vault (key ID 1)": "false", "kms v2/vault (key ID 2)": "true", "kms v2/vault (key ID unreadable)": "unknown"} {
				if tc.keyID == "" {
					want = "unknown"
				}
				if got := v.Writes(k); got != want {
					t.Errorf("%s writes: %s, want %s", k, got, want)
				}
			}
		})
	}
}
