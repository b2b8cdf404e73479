// Package decrypt decrypts values encrypted at rest, using kube-apiserver's
// own EncryptionConfiguration loader and value transformers from
// k8s.io/apiserver (aescbc, aesgcm, secretbox); no crypto is written here.
package decrypt

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	apiserverv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
	"k8s.io/apiserver/pkg/server/options/encryptionconfig"
	"k8s.io/apiserver/pkg/storage/value"

	"github.com/regghost/regghost/pkg/decode"
)

// Decrypter holds the transformers of one EncryptionConfiguration.
type Decrypter struct {
	transformers map[schema.GroupResource]value.Transformer
	// writers name the provider and key that write each configured resource.
	writers map[schema.GroupResource]string
	// readers name every provider and key that reads each resource.
	readers map[schema.GroupResource][]string
	// users name the resources each provider and key reads.
	users map[string][]string
	// kms are the KMS v2 plugins, by the name StoredWith gives their values.
	kms map[string]*apiserverv1.KMSConfiguration
	// Path is the configuration file, for reports.
	Path string
	// Root is where the node's files are (--node-root): a KMS plugin's
	// unix socket is looked for under it, as the configuration file is.
	Root string
}

// Load reads a kube-apiserver EncryptionConfiguration file.
func Load(ctx context.Context, path string) (*Decrypter, error) {
	cfg, err := encryptionconfig.LoadEncryptionConfig(ctx, path, false, "regghost")
	if err != nil {
		return nil, fmt.Errorf("load encryption provider config %s: %w", path, err)
	}
	l, err := readLayout(path)
	if err != nil {
		return nil, err
	}
	return &Decrypter{transformers: cfg.Transformers, writers: l.writers, readers: l.readers, users: l.users, kms: l.kms, Path: path}, nil
}

// transformer finds the transformer for a resource, honouring the
// "*.<group>" and "*.*" wildcards of the configuration.
func (d *Decrypter) transformer(gr schema.GroupResource) (value.Transformer, bool) {
	return lookup(d.transformers, gr)
}

// Decrypt returns the plaintext of an encrypted value stored under key for
// resource gr. KMS values are refused: they need the KMS plugin, which is not
// reachable offline.
func (d *Decrypter) Decrypt(ctx context.Context, key string, gr schema.GroupResource, data []byte) ([]byte, error) {
	enc, _, err := decode.ParseEncryption(data)
	if err != nil {
		return nil, err
	}
	if enc.Provider == "kms" {
		return nil, fmt.Errorf("kms %s provider %q cannot be decrypted offline (it needs the KMS plugin)", enc.Version, enc.KeyName)
	}
	t, ok := d.transformer(gr)
	if !ok {
		return nil, fmt.Errorf("%s configures no encryption for %s", d.Path, gr.String())
	}
	out, _, err := t.TransformFromStorage(ctx, data, value.DefaultContext(key))
	if err != nil {
		return nil, fmt.Errorf("decrypt with %s key %q: %w", enc.Provider, enc.KeyName, err)
	}
	return out, nil
}

// Readable reports whether kube-apiserver, running with this encryption
// config, can read data stored under key: a resource the config does not
// cover is read as stored (plaintext only); one it covers must pass its
// providers (an encrypted value needs its key in the config, a plaintext
// one the identity provider).
func (d *Decrypter) Readable(ctx context.Context, key string, gr schema.GroupResource, data []byte) error {
	_, _, err := d.Open(ctx, key, gr, data)
	return err
}
