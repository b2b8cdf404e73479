package etcdconn

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"
)

// explain works out, with a plain TCP and TLS handshake to one endpoint, why
// etcd cannot be reached, in one sentence that names the flag to fix. It
// returns "" when it finds nothing wrong at that level.
func explain(endpoint string, tlsCfg *tls.Config, timeout time.Duration) string {
	host, scheme := hostPort(endpoint)
	conn, err := net.DialTimeout("tcp", host, timeout)
	if err != nil {
		return fmt.Sprintf("nothing answers at %s (%v): check --endpoints", endpoint, unwrapNet(err))
	}
	defer conn.Close()
	if scheme == "http" || tlsCfg == nil {
		if scheme == "https" {
			return fmt.Sprintf("%s speaks TLS: pass --cacert (and --cert, --key if etcd checks client certificates)", endpoint)
		}
		return ""
	}
	cfg := tlsCfg.Clone()
	if cfg.ServerName == "" {
		cfg.ServerName, _, _ = net.SplitHostPort(host)
	}
	_ = conn.SetDeadline(time.Now().Add(timeout))
	tc := tls.Client(conn, cfg)
	err = tc.Handshake()
	if err == nil {
		// With TLS 1.3 the server says it rejects the client certificate
		// only after the handshake: read once to hear it.
		_ = tc.SetReadDeadline(time.Now().Add(timeout / 2))
		_, err = tc.Read(make([]byte, 1))
		var ne net.Error
		if err == nil || (errors.As(err, &ne) && ne.Timeout()) {
			return ""
		}
	}
	return tlsReason(endpoint, err, len(cfg.Certificates) > 0)
}

// tlsReason turns a TLS error into one sentence naming the flag to fix.
func tlsReason(endpoint string, err error, haveClientCert bool) string {
	var unknown x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	var hostname x509.HostnameError
	msg := err.Error()
	switch {
	case errors.As(err, &unknown):
		return fmt.Sprintf("etcd's server certificate at %s is signed by an authority --cacert does not hold: pass etcd's CA (on kubeadm /etc/kubernetes/pki/etcd/ca.crt) with --cacert", endpoint)
	case errors.As(err, &invalid) && invalid.Reason == x509.Expired:
		return fmt.Sprintf("etcd's server certificate at %s has expired (%v): renew it (kubeadm certs renew etcd-server)", endpoint, invalid.Detail)
	case errors.As(err, &hostname):
		return fmt.Sprintf("etcd's server certificate is not valid for the name in --endpoints %s (%v): use a name or address the certificate holds", endpoint, hostname.Error())
	case strings.Contains(msg, "certificate required") || (!haveClientCert && strings.Contains(msg, "bad certificate")):
		return fmt.Sprintf("etcd at %s requires a client certificate: pass --cert and --key (on kubeadm /etc/kubernetes/pki/apiserver-etcd-client.crt and .key)", endpoint)
	case strings.Contains(msg, "expired certificate"):
		return fmt.Sprintf("etcd at %s rejected the client certificate as expired: renew --cert", endpoint)
	case strings.Contains(msg, "bad certificate") || strings.Contains(msg, "unknown certificate authority") || strings.Contains(msg, "unknown certificate"):
		return fmt.Sprintf("etcd at %s rejected the client certificate: --cert and --key must be signed by the CA etcd trusts (its --trusted-ca-file)", endpoint)
	}
	return fmt.Sprintf("TLS with %s failed: %v", endpoint, err)
}

// checkClientFiles explains a client certificate that cannot work before any
// connection is tried: expired, or a key that does not belong to it.
func checkClientFiles(certFile, keyFile string) error {
	if certFile == "" {
		return nil
	}
	if _, err := tls.LoadX509KeyPair(certFile, keyFile); err != nil {
		if strings.Contains(err.Error(), "does not match") {
			return fmt.Errorf("--key %s is not the private key of --cert %s", keyFile, certFile)
		}
		return fmt.Errorf("load --cert %s and --key %s: %w", certFile, keyFile, err)
	}
	b, err := os.ReadFile(certFile)
	if err != nil {
		return err
	}
	if block, _ := pem.Decode(b); block != nil {
		if cert, err := x509.ParseCertificate(block.Bytes); err == nil && time.Now().After(cert.NotAfter) {
			return fmt.Errorf("the client certificate --cert %s expired at %s: renew it", certFile, cert.NotAfter.UTC().Format(time.RFC3339))
		}
	}
	return nil
}

// hostPort returns an endpoint's host:port and scheme ("" when it has none).
func hostPort(endpoint string) (string, string) {
	if u, err := url.Parse(endpoint); err == nil && u.Host != "" {
		return u.Host, u.Scheme
	}
	return endpoint, ""
}

func unwrapNet(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err
	}
	return err
}
