package decrypt

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	apiserverv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
	"k8s.io/apiserver/pkg/storage/value/encrypt/envelope/kmsv2"
	kmsutil "k8s.io/kms/pkg/util"
)

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
	endpoint, err := d.socket(c)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // closes the connection
	svc, err := kmsv2.NewGRPCService(ctx, endpoint, c.Name, timeout)
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

// socket is the endpoint of KMS plugin c as seen from here, read as
// kube-apiserver reads it: a unix socket's file under Root, refused at once
// when it is not there (gRPC would wait the plugin's whole timeout for it);
// an abstract socket (unix:///@name) as written.
func (d *Decrypter) socket(c *apiserverv1.KMSConfiguration) (string, error) {
	path, err := kmsutil.ParseEndpoint(c.Endpoint)
	if err != nil {
		return "", fmt.Errorf("KMS plugin %q: %w", c.Name, err)
	}
	if strings.HasPrefix(path, "@") {
		return c.Endpoint, nil
	}
	if d.Root != "" {
		path = filepath.Join(d.Root, path)
	}
	if path, err = filepath.Abs(path); err != nil {
		return "", fmt.Errorf("KMS plugin %q: %w", c.Name, err)
	}
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("KMS plugin %q has no socket here (%w): run on a control-plane node, where kube-apiserver reaches it, or mount its directory", c.Name, err)
	}
	return (&url.URL{Scheme: "unix", Path: path}).String(), nil
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
