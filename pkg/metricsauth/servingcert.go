package metricsauth

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/yaml"
)

// The files of a certificate directory (serve --cert-dir).
const (
	// CertFile holds the serving certificate, then the CA that signed it
	// (client-go's self-signed pair, as kube-controller-manager writes
	// into its --cert-dir).
	CertFile = "regghost.crt"
	// KeyFile holds the certificate's private key.
	KeyFile = "regghost.key"
	// WebConfigFile is the exporter-toolkit web configuration the endpoint
	// is served from: the pair inline, so that one rename replaces both
	// and no TLS handshake reads a certificate beside another's key, and
	// the rest of the web configuration serve was given, if any.
	WebConfigFile = "web-config.yml"
)

// CertCheckInterval is how often the directory is looked at: a pair
// removed, changed or near its end is replaced within this long.
const CertCheckInterval = 10 * time.Second

// RenewAfter is the part of a certificate's lifetime after which a new
// one is made (client-go's certificate manager renews between 70% and 90%).
const RenewAfter = 0.8

// ServingCertOptions say where a serving certificate is kept and for what.
type ServingCertOptions struct {
	// Dir is the directory; it is made if missing.
	Dir string
	// Listen is the address served (its host, when it has one, is in the
	// certificate beside the host name, localhost, 127.0.0.1 and ::1).
	Listen string
	// WebConfig is an exporter-toolkit web configuration without TLS
	// whose other settings (basic auth, headers, rate limit) are served
	// too, read again at each check; "" for none.
	WebConfig string
	// MaxAge is a new certificate's lifetime; 0 for client-go's year.
	MaxAge time.Duration
	Log    *slog.Logger
}

// ServingCert keeps a self-signed serving certificate in a directory, as
// kube-controller-manager does with --cert-dir, and renews it: a pair
// missing, unreadable, not matching or past RenewAfter of its lifetime is
// replaced by a new one. The endpoint serves WebConfig(), which
// exporter-toolkit reads again at each TLS handshake, so a new pair is
// served without a restart. A valid pair put in the directory is served
// as it is, until it nears its end.
type ServingCert struct {
	o     ServingCertOptions
	hosts []string
	// every and now are CertCheckInterval and time.Now, but in tests.
	every time.Duration
	now   func() time.Time
}

// NewServingCert returns the keeper of o.Dir; nothing is read or written
// before Ensure.
func NewServingCert(o ServingCertOptions) *ServingCert {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &ServingCert{o: o, hosts: servingHosts(o.Listen), every: CertCheckInterval, now: time.Now}
}

// WebConfig is the path of the web configuration to serve from.
func (s *ServingCert) WebConfig() string { return filepath.Join(s.o.Dir, WebConfigFile) }

// Ensure makes a new pair when the directory's is not good for long, and
// writes the web configuration from the pair when it differs from what is
// there. It reports whether a new pair was made.
func (s *ServingCert) Ensure() (bool, error) {
	if err := os.MkdirAll(s.o.Dir, 0o700); err != nil {
		return false, fmt.Errorf("make the certificate directory: %w", err)
	}
	certPEM, keyPEM, why := s.current()
	made := why != ""
	if made {
		var err error
		if certPEM, keyPEM, err = s.generate(); err != nil {
			return false, err
		}
		if err := writeAtomic(filepath.Join(s.o.Dir, KeyFile), keyPEM, 0o600); err != nil {
			return false, err
		}
		if err := writeAtomic(filepath.Join(s.o.Dir, CertFile), certPEM, 0o644); err != nil {
			return false, err
		}
	}
	web, err := s.webConfig(certPEM, keyPEM)
	if err != nil {
		return made, err
	}
	if old, err := os.ReadFile(s.WebConfig()); err != nil || !bytes.Equal(old, web) {
		if err := writeAtomic(s.WebConfig(), web, 0o600); err != nil {
			return made, err
		}
	}
	if made {
		leaf, _ := parseLeaf(certPEM)
		s.o.Log.Info("serving certificate made", "dir", s.o.Dir, "because", why, "not_after", leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	return made, nil
}

// Run calls Ensure every CertCheckInterval until ctx ends. A failure is
// logged; the web configuration last written goes on being served.
func (s *ServingCert) Run(ctx context.Context) {
	t := time.NewTicker(s.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := s.Ensure(); err != nil {
				s.o.Log.Error("cannot keep the serving certificate; the last one written is served", "dir", s.o.Dir, "err", err.Error())
			}
		}
	}
}

// current returns the directory's pair, or why a new one is needed.
func (s *ServingCert) current() (certPEM, keyPEM []byte, why string) {
	certPEM, err := os.ReadFile(filepath.Join(s.o.Dir, CertFile))
	if err != nil {
		return nil, nil, "no certificate: " + err.Error()
	}
	keyPEM, err = os.ReadFile(filepath.Join(s.o.Dir, KeyFile))
	if err != nil {
		return nil, nil, "no key: " + err.Error()
	}
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		return nil, nil, "unusable pair: " + err.Error()
	}
	leaf, err := parseLeaf(certPEM)
	if err != nil {
		return nil, nil, "unusable certificate: " + err.Error()
	}
	life := leaf.NotAfter.Sub(leaf.NotBefore)
	if renew := leaf.NotBefore.Add(time.Duration(float64(life) * RenewAfter)); !s.now().Before(renew) {
		return nil, nil, "expires " + leaf.NotAfter.UTC().Format(time.RFC3339)
	}
	return certPEM, keyPEM, ""
}

// generate makes a self-signed pair for the hosts (client-go's: a CA of
// its own, RSA 2048, valid from an hour ago).
func (s *ServingCert) generate() (certPEM, keyPEM []byte, err error) {
	var ips []net.IP
	var names []string
	for _, h := range s.hosts[1:] {
		if ip := net.ParseIP(h); ip != nil {
			ips = append(ips, ip)
		} else {
			names = append(names, h)
		}
	}
	certPEM, keyPEM, err = certutil.GenerateSelfSignedCertKeyWithOptions(certutil.SelfSignedCertKeyOptions{
		Host: s.hosts[0], AlternateIPs: ips, AlternateDNS: names, MaxAge: s.o.MaxAge})
	if err != nil {
		return nil, nil, fmt.Errorf("generate a self-signed certificate: %w", err)
	}
	return certPEM, keyPEM, nil
}

// webConfig is the web configuration serving the pair, over the given
// one's other settings.
func (s *ServingCert) webConfig(certPEM, keyPEM []byte) ([]byte, error) {
	cfg := map[string]any{}
	if s.o.WebConfig != "" {
		b, err := os.ReadFile(s.o.WebConfig)
		if err != nil {
			return nil, fmt.Errorf("read the web configuration: %w", err)
		}
		if err := yaml.Unmarshal(b, &cfg); err != nil {
			return nil, fmt.Errorf("parse %s: %w", s.o.WebConfig, err)
		}
		if cfg == nil {
			cfg = map[string]any{}
		}
		if _, ok := cfg["tls_server_config"]; ok {
			return nil, fmt.Errorf("%s has a tls_server_config of its own", s.o.WebConfig)
		}
	}
	cfg["tls_server_config"] = map[string]any{"cert": string(certPEM), "key": string(keyPEM)}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("write the web configuration: %w", err)
	}
	return append([]byte("# Written by regghost serve --cert-dir from "+CertFile+" and "+KeyFile+"; replaced when they are.\n"), b...), nil
}

// servingHosts are the names a new certificate is for: the host name
// first, then localhost and the loopback addresses, and the listen
// address's host when it names one.
func servingHosts(listen string) []string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	hosts := []string{host}
	seen := map[string]bool{host: true}
	add := func(h string) {
		if h != "" && !seen[h] {
			seen[h] = true
			hosts = append(hosts, h)
		}
	}
	add("localhost")
	add("127.0.0.1")
	add("::1")
	if h, _, err := net.SplitHostPort(listen); err == nil {
		if ip, err := netip.ParseAddr(h); err != nil || !ip.IsUnspecified() {
			add(h)
		}
	}
	return hosts
}

// parseLeaf is the first certificate of a PEM bundle.
func parseLeaf(certPEM []byte) (*x509.Certificate, error) {
	certs, err := certutil.ParseCertsPEM(certPEM)
	if err != nil {
		return nil, err
	}
	if len(certs) == 0 {
		return nil, errors.New("no certificate")
	}
	return certs[0], nil
}

// writeAtomic replaces path with data: written beside it, then renamed,
// so a reader sees the old content or the new, never a part.
func writeAtomic(path string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a successful rename there is nothing left to remove
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
