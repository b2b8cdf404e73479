package decrypt

import (
	"context"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime/schema"
	apiserverv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
	"k8s.io/apiserver/pkg/storage/value"
	"sigs.k8s.io/yaml"

	"github.com/regghost/regghost/pkg/decode"
	"github.com/regghost/regghost/pkg/etcdscan"
)

// Identity names a plaintext value, and the identity provider that writes one.
const Identity = "identity"

// layout is what a configuration says of its providers: which provider and
// key writes each resource (the first provider of the first entry that
// lists it: kube-apiserver appends later entries' providers after it),
// every provider and key that reads it, the resources each reads, and its
// KMS v2 plugins.
type layout struct {
	writers map[schema.GroupResource]string
	readers map[schema.GroupResource][]string
	users   map[string][]string
	kms     map[string]*apiserverv1.KMSConfiguration
}

// readLayout reads the layout of the configuration at path.
func readLayout(path string) (*layout, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read encryption provider config %s: %w", path, err)
	}
	var cfg apiserverv1.EncryptionConfiguration
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("parse encryption provider config %s: %w", path, err)
	}
	out := map[schema.GroupResource]string{}
	read := map[schema.GroupResource][]string{}
	users := map[string][]string{}
	for _, rc := range cfg.Resources {
		if len(rc.Providers) == 0 {
			continue
		}
		w := ProviderName(rc.Providers[0])
		for _, p := range rc.Providers {
			for _, k := range keyNames(p) {
				users[k] = append(users[k], rc.Resources...)
			}
		}
		for _, r := range rc.Resources {
			gr := schema.ParseGroupResource(r)
			if _, ok := out[gr]; !ok {
				out[gr] = w
			}
			for _, p := range rc.Providers {
				read[gr] = append(read[gr], keyNames(p)...)
			}
		}
	}
	return &layout{writers: out, readers: read, users: users, kms: kmsPlugins(&cfg)}, nil
}

// keyNames names every key of a provider as StoredWith names a value.
func keyNames(p apiserverv1.ProviderConfiguration) []string {
	var keys []apiserverv1.Key
	provider := ""
	switch {
	case p.AESCBC != nil:
		provider, keys = "aescbc", p.AESCBC.Keys
	case p.AESGCM != nil:
		provider, keys = "aesgcm", p.AESGCM.Keys
	case p.Secretbox != nil:
		provider, keys = "secretbox", p.Secretbox.Keys
	default:
		return []string{ProviderName(p)}
	}
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = provider + "/" + k.Name
	}
	return out
}

// ProviderName names a provider the way a stored value's prefix does:
// "aescbc/key2" (its first key, the one that writes), "kms v2/<plugin>",
// or "identity".
func ProviderName(p apiserverv1.ProviderConfiguration) string {
	first := func(provider string, keys []apiserverv1.Key) string {
		if len(keys) == 0 {
			return provider
		}
		return provider + "/" + keys[0].Name
	}
	switch {
	case p.AESCBC != nil:
		return first("aescbc", p.AESCBC.Keys)
	case p.AESGCM != nil:
		return first("aesgcm", p.AESGCM.Keys)
	case p.Secretbox != nil:
		return first("secretbox", p.Secretbox.Keys)
	case p.KMS != nil:
		v := p.KMS.APIVersion
		if v == "" {
			v = "v1"
		}
		return "kms " + v + "/" + p.KMS.Name
	}
	return Identity
}

// StoredWith names how a value is stored, as ProviderName names a
// provider: "aescbc/key1", "kms v2/<plugin>", or "identity" for plaintext.
func StoredWith(data []byte) string {
	enc, _, err := decode.ParseEncryption(data)
	if err != nil {
		return etcdscan.KeyName(nil)
	}
	return etcdscan.KeyName(&enc)
}

// lookup finds gr's entry in m as kube-apiserver does: the resource, then
// "*.<group>", then "*.*".
func lookup[T any](m map[schema.GroupResource]T, gr schema.GroupResource) (T, bool) {
	for _, k := range []schema.GroupResource{gr, {Group: gr.Group, Resource: "*"}, {Group: "*", Resource: "*"}} {
		if v, ok := m[k]; ok {
			return v, true
		}
	}
	var zero T
	return zero, false
}

// Writer names the provider and key kube-apiserver, running with this
// configuration, writes gr with ("identity" when the configuration does not
// cover gr).
func (d *Decrypter) Writer(gr schema.GroupResource) string {
	if w, ok := lookup(d.writers, gr); ok {
		return w
	}
	return Identity
}

// Readers names every provider and key this configuration reads gr with,
// in its order (the first one writes).
func (d *Decrypter) Readers(gr schema.GroupResource) []string {
	if r, ok := lookup(d.readers, gr); ok {
		return r
	}
	return []string{Identity}
}

// ReadBy names the resources (as the configuration lists them: secrets,
// *.example.com, *.*) that provider and key reads.
func (d *Decrypter) ReadBy(key string) []string { return d.users[key] }

// Open reads data stored under key for gr as kube-apiserver with this
// configuration reads it: the plaintext, and whether its next write would
// change how it is stored (stale: it was not read with the provider and key
// that write). A value it cannot read is an error; KMS values cannot be read
// offline.
func (d *Decrypter) Open(ctx context.Context, key string, gr schema.GroupResource, data []byte) (plain []byte, stale bool, err error) {
	enc, _, perr := decode.ParseEncryption(data)
	t, ok := d.transformer(gr)
	if !ok {
		if perr == nil {
			return nil, false, fmt.Errorf("%s configures no encryption for %s, and the value is encrypted with %s key %q", d.Path, gr.String(), enc.Provider, enc.KeyName)
		}
		return data, false, nil
	}
	if perr == nil && enc.Provider == "kms" {
		return nil, false, fmt.Errorf("kms %s key %q cannot be read offline (it needs the KMS plugin)", enc.Version, enc.KeyName)
	}
	out, stale, err := t.TransformFromStorage(ctx, data, value.DefaultContext(key))
	if err != nil {
		if perr == nil {
			return nil, false, fmt.Errorf("%s does not hold %s key %q: %v", d.Path, enc.Provider, enc.KeyName, err)
		}
		return nil, false, fmt.Errorf("%s encrypts %s without the identity provider, so a plaintext value cannot be read: %v", d.Path, gr.String(), err)
	}
	return out, stale, nil
}
