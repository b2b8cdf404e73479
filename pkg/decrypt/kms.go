package decrypt

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	apiserverv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
	"k8s.io/apiserver/pkg/storage/value/encrypt/envelope/kmsv2"
	kmstypes "k8s.io/apiserver/pkg/storage/value/encrypt/envelope/kmsv2/v2"

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

// KMSKeyID reads the key ID a KMS v2 value was encrypted under: the
// plugin's key ID that kube-apiserver writes, in the clear, in the value's
// EncryptedObject next to the ciphertext. Nothing is decrypted.
func KMSKeyID(data []byte) (string, error) {
	enc, rest, err := decode.ParseEncryption(data)
	if err != nil {
		return "", err
	}
	if enc.Provider != "kms" || enc.Version != "v2" {
		return "", fmt.Errorf("encrypted with %s, not a KMS v2 plugin", StoredWith(data))
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

// kmsDefaultTimeout is kube-apiserver's timeout for a KMS call when the
// configuration gives none.
const kmsDefaultTimeout = 3 * time.Second

// CurrentKeyID asks the KMS v2 plugin the configuration names (plugin as
// StoredWith names it: "kms v2/vault") for the key ID it encrypts with now,
// through the endpoint the configuration gives, as kube-apiserver asks it:
// a value under another key ID is rewritten by the API server's next write
// of it.
func (d *Decrypter) CurrentKeyID(ctx context.Context, plugin string) (string, error) {
	c, ok := d.kms[plugin]
	if !ok {
		return "", fmt.Errorf("%s names no KMS v2 plugin %q", d.Path, strings.TrimPrefix(plugin, "kms v2/"))
	}
	timeout := kmsDefaultTimeout
	if c.Timeout != nil && c.Timeout.Duration > 0 {
		timeout = c.Timeout.Duration
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // closes the connection
	svc, err := kmsv2.NewGRPCService(ctx, c.Endpoint, c.Name, timeout)
	if err != nil {
		return "", fmt.Errorf("connect to KMS plugin %q at %s: %w", c.Name, c.Endpoint, err)
	}
	st, err := svc.Status(ctx)
	if err != nil {
		return "", fmt.Errorf("ask KMS plugin %q at %s for its key ID: %w", c.Name, c.Endpoint, err)
	}
	if st.Healthz != "ok" {
		return "", fmt.Errorf("KMS plugin %q at %s is not healthy (%q)", c.Name, c.Endpoint, st.Healthz)
	}
	if st.KeyID == "" {
		return "", fmt.Errorf("KMS plugin %q at %s names no key ID", c.Name, c.Endpoint)
	}
	return st.KeyID, nil
}

// SameEndpoint names every KMS v2 plugin of the configuration at the
// endpoint of plugin, plugin included: kube-apiserver requires each a name
// of its own, so one plugin serving several entries is several names, and
// a key ID of its KMS serves them all.
func (d *Decrypter) SameEndpoint(plugin string) []string {
	c, ok := d.kms[plugin]
	if !ok {
		return nil
	}
	var out []string
	for name, o := range d.kms {
		if o.Endpoint == c.Endpoint {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// kmsPlugins are the configuration's KMS v2 plugins, by the name
// StoredWith gives their values.
func kmsPlugins(cfg *apiserverv1.EncryptionConfiguration) map[string]*apiserverv1.KMSConfiguration {
	out := map[string]*apiserverv1.KMSConfiguration{}
	for _, rc := range cfg.Resources {
		for _, p := range rc.Providers {
			if p.KMS != nil && p.KMS.APIVersion == "v2" {
				out[ProviderName(p)] = p.KMS
			}
		}
	}
	return out
}
