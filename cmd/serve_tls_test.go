package cmd

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	certutil "k8s.io/client-go/util/cert"

	"github.com/regghost/regghost/pkg/metricsauth"
)

// serveTLSFiles writes what the TLS cases need: a web configuration with
// a tls_server_config (a loadable pair), one with a header only, and a
// kubeconfig delegated auth can be built on (its API server is never
// asked: the run is cancelled before a scrape or a scan).
func serveTLSFiles(t *testing.T) (webTLS, webPlain, kubeconfig string) {
	webTLS, webPlain, _, _, kubeconfig = serveWebFiles(t)
	return webTLS, webPlain, kubeconfig
}

// serveWebFiles is serveTLSFiles with two web configurations more, both
// with basic_auth_users: one without TLS, one with it.
func serveWebFiles(t *testing.T) (webTLS, webPlain, webBasic, webBasicTLS, kubeconfig string) {
	t.Helper()
	dir := t.TempDir()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("localhost", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	crt, key := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	webTLS, webPlain, kubeconfig = filepath.Join(dir, "tls.yml"), filepath.Join(dir, "plain.yml"), filepath.Join(dir, "kubeconfig")
	webBasic, webBasicTLS = filepath.Join(dir, "basic.yml"), filepath.Join(dir, "basic-tls.yml")
	// bcrypt of "secret".
	const users = "basic_auth_users:\n  prometheus: $2y$10$mDwo.lAisC94iLAyP81MCesa29IzH37oigHC/42V2pdJlUprsJPze\n"
	for path, content := range map[string]string{
		crt:         string(certPEM),
		key:         string(keyPEM),
		webTLS:      fmt.Sprintf("tls_server_config:\n  cert_file: %s\n  key_file: %s\n", crt, key),
		webPlain:    "http_server_config:\n  headers:\n    X-Frame-Options: deny\n",
		webBasic:    users,
		webBasicTLS: fmt.Sprintf("tls_server_config:\n  cert_file: %s\n  key_file: %s\n", crt, key) + users,
		kubeconfig:  "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"https://127.0.0.1:1\"}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n",
	} {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return webTLS, webPlain, webBasic, webBasicTLS, kubeconfig
}

// TestServeTLSFlags: every combination of --metrics-auth, where TLS comes
// from (none, --cert-dir, --web-config-file's tls_server_config, both),
// --insecure-http and a loopback or other --listen-address. A bearer
// token never crosses the network in clear: delegated auth without TLS is
// refused unless --insecure-http on loopback; --insecure-http anywhere
// else, with --metrics-auth=none or with TLS is refused too, and so is TLS
// given two ways. A refusal is one line with the usage exit code, naming
// the flags that fix it, before anything listens; an accepted combination
// starts (and stops at once: its context is cancelled), --cert-dir making
// its certificate.
func TestServeTLSFlags(t *testing.T) {
	webTLS, webPlain, webBasic, webBasicTLS, kubeconfig := serveWebFiles(t)
	const (
		inClear    = "--metrics-auth=delegated takes bearer tokens, which must not cross the network in clear: serve TLS with --cert-dir DIR (a self-signed certificate, made and renewed there) or a --web-config-file with tls_server_config (or, on a loopback --listen-address only, add --insecure-http)"
		notLoop    = "--insecure-http needs a loopback --listen-address (127.0.0.1:PORT, [::1]:PORT or localhost:PORT), got %q: elsewhere credentials would cross the network in clear; serve TLS with --cert-dir DIR instead"
		noToken    = "--insecure-http only goes with credentials (--metrics-auth=delegated, or a --web-config-file with basic_auth_users): nothing is sent in clear without them, drop it"
		basicClear = "--web-config-file %s sets basic_auth_users: their passwords must not cross the network in clear: serve TLS with --cert-dir DIR (a self-signed certificate, made and renewed there) or a --web-config-file with tls_server_config (or, on a loopback --listen-address only, add --insecure-http)"
		tlsCertDir = "--insecure-http asks for plain HTTP and --cert-dir turns TLS on: drop one"
		tlsWeb     = "--insecure-http asks for plain HTTP and --web-config-file's tls_server_config turns TLS on: drop one"
		oneWay     = "--cert-dir serves a certificate of its own and --web-config-file %s has a tls_server_config: give TLS one way (drop --cert-dir, or the file's tls_server_config)"
	)
	const lo, all = "127.0.0.1:0", "0.0.0.0:0"
	tests := []struct {
		auth     string // --metrics-auth
		tls      string // "", "cert-dir", "web" (tls_server_config), "both"
		insecure bool
		listen   string
		// want is the refusal, "" when accepted.
		want string
	}{
		{"none", "", false, lo, ""},
		{"none", "", false, all, ""},
		{"none", "", true, lo, noToken},
		{"none", "", true, all, fmt.Sprintf(notLoop, all)},
		{"none", "cert-dir", false, lo, ""},
		{"none", "cert-dir", false, all, ""},
		{"none", "cert-dir", true, lo, noToken},
		{"none", "cert-dir", true, all, fmt.Sprintf(notLoop, all)},
		{"none", "web", false, lo, ""},
		{"none", "web", false, all, ""},
		{"none", "web", true, lo, noToken},
		{"none", "web", true, all, fmt.Sprintf(notLoop, all)},
		{"none", "both", false, lo, fmt.Sprintf(oneWay, webTLS)},
		{"none", "both", false, all, fmt.Sprintf(oneWay, webTLS)},
		{"none", "both", true, lo, fmt.Sprintf(oneWay, webTLS)},
		{"none", "both", true, all, fmt.Sprintf(oneWay, webTLS)},
		{"delegated", "", false, lo, inClear},
		{"delegated", "", false, all, inClear},
		{"delegated", "", true, lo, ""},
		{"delegated", "", true, all, fmt.Sprintf(notLoop, all)},
		{"delegated", "cert-dir", false, lo, ""},
		{"delegated", "cert-dir", false, all, ""},
		{"delegated", "cert-dir", true, lo, tlsCertDir},
		{"delegated", "cert-dir", true, all, fmt.Sprintf(notLoop, all)},
		{"delegated", "web", false, lo, ""},
		{"delegated", "web", false, all, ""},
		{"delegated", "web", true, lo, tlsWeb},
		{"delegated", "web", true, all, fmt.Sprintf(notLoop, all)},
		{"delegated", "both", false, lo, fmt.Sprintf(oneWay, webTLS)},
		{"delegated", "both", false, all, fmt.Sprintf(oneWay, webTLS)},
		{"delegated", "both", true, lo, fmt.Sprintf(oneWay, webTLS)},
		{"delegated", "both", true, all, fmt.Sprintf(oneWay, webTLS)},
		// Loopback by another name, and every interface.
		{"delegated", "", true, "[::1]:0", ""},
		{"delegated", "", true, "localhost:0", ""},
		{"delegated", "", true, "127.0.0.2:0", ""},
		{"delegated", "", true, ":0", fmt.Sprintf(notLoop, ":0")},
		{"delegated", "", true, "[::]:0", fmt.Sprintf(notLoop, "[::]:0")},
		// A web configuration without TLS is no TLS; with --cert-dir its
		// other settings are served over the certificate.
		{"delegated", "plain web", false, lo, inClear},
		{"delegated", "plain web and cert-dir", false, lo, ""},
		// basic_auth_users are credentials too, under --metrics-auth=none:
		// never in clear off loopback.
		{"none", "basic web", false, all, fmt.Sprintf(basicClear, webBasic)},
		{"none", "basic web", false, lo, fmt.Sprintf(basicClear, webBasic)},
		{"none", "basic web", true, lo, ""},
		{"none", "basic web", true, all, fmt.Sprintf(notLoop, all)},
		{"none", "basic web and cert-dir", false, all, ""},
		{"none", "basic tls web", false, all, ""},
		{"none", "basic tls web", true, lo, tlsWeb},
	}
	for _, tt := range tests {
		name := fmt.Sprintf("%s/tls=%s/insecure=%v/%s", tt.auth, tt.tls, tt.insecure, tt.listen)
		t.Run(name, func(t *testing.T) {
			certDir := filepath.Join(t.TempDir(), "certs")
			args := []string{"serve", "--listen-address", tt.listen, "--metrics-auth", tt.auth, "--kubeconfig", kubeconfig, "--endpoints", "127.0.0.1:1"}
			switch tt.tls {
			case "cert-dir":
				args = append(args, "--cert-dir", certDir)
			case "web":
				args = append(args, "--web-config-file", webTLS)
			case "both":
				args = append(args, "--cert-dir", certDir, "--web-config-file", webTLS)
			case "plain web":
				args = append(args, "--web-config-file", webPlain)
			case "plain web and cert-dir":
				args = append(args, "--cert-dir", certDir, "--web-config-file", webPlain)
			case "basic web":
				args = append(args, "--web-config-file", webBasic)
			case "basic web and cert-dir":
				args = append(args, "--cert-dir", certDir, "--web-config-file", webBasic)
			case "basic tls web":
				args = append(args, "--web-config-file", webBasicTLS)
			}
			if tt.insecure {
				args = append(args, "--insecure-http")
			}
			if tt.want != "" {
				var out, errOut bytes.Buffer
				code := Run(args, strings.NewReader(""), &out, &errOut)
				if code != ExitUsage {
					t.Errorf("exit %d, want %d; stderr: %s", code, ExitUsage, errOut.String())
				}
				if got, want := errOut.String(), "regghost: "+tt.want+"\n"; got != want {
					t.Errorf("stderr:\n%q\nwant\n%q", got, want)
				}
				if _, err := os.Stat(certDir); err == nil {
					t.Errorf("a refused run made %s", certDir)
				}
				return
			}
			var errOut bytes.Buffer
			root := NewRoot(strings.NewReader(""), &bytes.Buffer{}, &errOut)
			root.SetArgs(args)
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if err := root.ExecuteContext(ctx); err != nil {
				t.Fatalf("accepted flags: %v", err)
			}
			_, err := os.Stat(filepath.Join(certDir, metricsauth.WebConfigFile))
			if made := err == nil; made != strings.Contains(tt.tls, "cert-dir") {
				t.Errorf("%s made: %v, want %v", metricsauth.WebConfigFile, made, !made)
			}
			mode := map[string]string{"": "off", "web": "web-config-file", "plain web": "off"}[tt.tls]
			if strings.Contains(tt.tls, "cert-dir") {
				mode = "cert-dir"
			}
			if want := "metrics_auth=" + tt.auth + " tls=" + mode; !strings.Contains(errOut.String(), want) {
				t.Errorf("the log does not say %q:\n%s", want, errOut.String())
			}
		})
	}
}
