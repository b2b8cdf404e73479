package metricsauth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/exporter-toolkit/web"
	certutil "k8s.io/client-go/util/cert"
)

// servedBy starts exporter-toolkit's server on webConfig, as serve does,
// and returns its address.
func servedBy(t *testing.T, webConfig string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "metrics") }), ReadHeaderTimeout: 10 * time.Second}
	no := false
	done := make(chan error, 1)
	go func() {
		done <- web.Serve(l, srv, &web.FlagConfig{WebListenAddresses: &[]string{l.Addr().String()}, WebSystemdSocket: &no, WebConfigFile: &webConfig}, slog.New(slog.DiscardHandler))
	}()
	t.Cleanup(func() {
		srv.Close()
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("web.Serve: %v", err)
		}
	})
	return l.Addr().String()
}

// servedSerial is the serial of the certificate a new TLS connection to
// addr is shown, checked against roots for name when roots is set.
func servedSerial(t *testing.T, addr, name string, roots *x509.CertPool) *big.Int {
	t.Helper()
	cfg := &tls.Config{InsecureSkipVerify: roots == nil, RootCAs: roots, ServerName: name}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: cfg}}
	resp, err := c.Get("https://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("GET https://%s/metrics: %v", addr, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(body) != "metrics" {
		t.Fatalf("GET https://%s/metrics: %d %q", addr, resp.StatusCode, body)
	}
	return resp.TLS.PeerCertificates[0].SerialNumber
}

// fileSerial is the serial of the directory's certificate.
func fileSerial(t *testing.T, dir string) *big.Int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, CertFile))
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := parseLeaf(b)
	if err != nil {
		t.Fatal(err)
	}
	return leaf.SerialNumber
}

// TestServingCertMadeServedAndRenewed: a certificate is made in a new
// directory (private key and web configuration readable by root only),
// served through exporter-toolkit for the loopback names, and kept while
// it is good; removed, spoilt or near its end it is replaced, and the new
// one is served on the next connection without a restart. A plain-HTTP
// request to the TLS port gets no metrics.
func TestServingCertMadeServedAndRenewed(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	s := NewServingCert(ServingCertOptions{Dir: dir, Listen: "127.0.0.1:9819"})
	if made, err := s.Ensure(); err != nil || !made {
		t.Fatalf("Ensure in a new directory: made %v, %v", made, err)
	}
	for name, want := range map[string]os.FileMode{"": 0o700, KeyFile: 0o600, WebConfigFile: 0o600, CertFile: 0o644} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s/%s: %v %v, want mode %v", dir, name, fi.Mode().Perm(), err, want)
		}
	}
	if err := web.Validate(s.WebConfig()); err != nil {
		t.Fatalf("the written web configuration: %v", err)
	}
	addr := servedBy(t, s.WebConfig())
	roots, err := certutil.NewPool(filepath.Join(dir, CertFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"localhost", "127.0.0.1"} {
		if got, want := servedSerial(t, addr, name, roots), fileSerial(t, dir); got.Cmp(want) != 0 {
			t.Errorf("served certificate %v, want %s's %v", got, CertFile, want)
		}
	}

	t.Run("plain HTTP to the TLS port", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer a-token")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("plain HTTP: %v, want Go's 400 answer", err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusBadRequest || string(body) == "metrics" {
			t.Errorf("plain HTTP: %d %q, want 400 without the metrics", resp.StatusCode, body)
		}
	})

	before, err := os.ReadFile(s.WebConfig())
	if err != nil {
		t.Fatal(err)
	}
	if made, err := s.Ensure(); err != nil || made {
		t.Fatalf("Ensure with a good pair: made %v, %v", made, err)
	}
	if after, _ := os.ReadFile(s.WebConfig()); string(after) != string(before) {
		t.Errorf("the web configuration was rewritten with the same pair")
	}

	leafNow := func() *x509.Certificate {
		b, _ := os.ReadFile(filepath.Join(dir, CertFile))
		leaf, err := parseLeaf(b)
		if err != nil {
			t.Fatal(err)
		}
		return leaf
	}
	at := func(part float64) func() time.Time {
		leaf := leafNow()
		return func() time.Time {
			return leaf.NotBefore.Add(time.Duration(float64(leaf.NotAfter.Sub(leaf.NotBefore)) * part))
		}
	}
	otherKey := func() {
		_, key, err := certutil.GenerateSelfSignedCertKey("other", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, KeyFile), key, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		name   string
		change func()
		want   bool
	}{
		{"not yet near its end", func() { s.now = at(RenewAfter - 0.01) }, false},
		{"near its end", func() { s.now = at(RenewAfter + 0.01) }, true},
		{"certificate removed", func() { os.Remove(filepath.Join(dir, CertFile)) }, true},
		{"key removed", func() { os.Remove(filepath.Join(dir, KeyFile)) }, true},
		{"key of another pair", otherKey, true},
		{"certificate not PEM", func() { os.WriteFile(filepath.Join(dir, CertFile), []byte("oops"), 0o644) }, true},
		{"web configuration removed", func() { os.Remove(s.WebConfig()) }, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s.now = time.Now
			old := servedSerial(t, addr, "", nil)
			tt.change()
			made, err := s.Ensure()
			if err != nil || made != tt.want {
				t.Fatalf("Ensure: made %v, %v; want made %v", made, err, tt.want)
			}
			got := servedSerial(t, addr, "", nil)
			if got.Cmp(fileSerial(t, dir)) != 0 {
				t.Errorf("served %v, the directory holds %v", got, fileSerial(t, dir))
			}
			if (got.Cmp(old) != 0) != tt.want {
				t.Errorf("served %v before and %v after, want a new one: %v", old, got, tt.want)
			}
		})
	}
}

// TestServingCertKeepsTheGivenWebConfig: the given web configuration's
// other settings are served with the certificate, its changes taken at the
// next check; one with a tls_server_config of its own is refused.
func TestServingCertKeepsTheGivenWebConfig(t *testing.T) {
	dir := t.TempDir()
	given := filepath.Join(dir, "web.yml")
	write := func(s string) {
		if err := os.WriteFile(given, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("http_server_config:\n  headers:\n    X-Frame-Options: deny\n")
	s := NewServingCert(ServingCertOptions{Dir: filepath.Join(dir, "certs"), WebConfig: given})
	if _, err := s.Ensure(); err != nil {
		t.Fatal(err)
	}
	check := func(want ...string) {
		t.Helper()
		if err := web.Validate(s.WebConfig()); err != nil {
			t.Fatalf("the written web configuration: %v", err)
		}
		b, _ := os.ReadFile(s.WebConfig())
		for _, w := range append(want, "tls_server_config:", "BEGIN CERTIFICATE", "PRIVATE KEY") {
			if !strings.Contains(string(b), w) {
				t.Errorf("the written web configuration lacks %q:\n%s", w, b)
			}
		}
	}
	check("X-Frame-Options: deny")
	write("basic_auth_users:\n  prometheus: $2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi\n")
	if made, err := s.Ensure(); err != nil || made {
		t.Fatalf("Ensure after the given file changed: made %v, %v", made, err)
	}
	check("prometheus: $2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi")
	write("tls_server_config:\n  cert_file: a.crt\n  key_file: a.key\n")
	if _, err := s.Ensure(); err == nil || !strings.Contains(err.Error(), "tls_server_config of its own") {
		t.Errorf("Ensure with a given tls_server_config: %v, want a refusal", err)
	}
}

// TestServingCertRun: the periodic check replaces a removed certificate;
// a directory that cannot be made is an error from Ensure.
func TestServingCertRun(t *testing.T) {
	dir := t.TempDir()
	s := NewServingCert(ServingCertOptions{Dir: dir})
	s.every = 10 * time.Millisecond
	if _, err := s.Ensure(); err != nil {
		t.Fatal(err)
	}
	old := fileSerial(t, dir)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	if err := os.Remove(filepath.Join(dir, CertFile)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if b, err := os.ReadFile(filepath.Join(dir, CertFile)); err == nil {
			if leaf, err := parseLeaf(b); err == nil && leaf.SerialNumber.Cmp(old) != 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the removed certificate was not made anew")
		}
		time.Sleep(10 * time.Millisecond)
	}

	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := NewServingCert(ServingCertOptions{Dir: filepath.Join(file, "certs")}).Ensure(); err == nil || !strings.Contains(err.Error(), "make the certificate directory") {
		t.Errorf("Ensure under a file: %v, want the directory named as the cause", err)
	}
}

// TestServingHosts: the host name, the loopback names, and the listen
// address's host unless it is every interface.
func TestServingHosts(t *testing.T) {
	host, _ := os.Hostname()
	for listen, want := range map[string]string{
		":9819":         "localhost 127.0.0.1 ::1",
		"0.0.0.0:9819":  "localhost 127.0.0.1 ::1",
		"[::]:9819":     "localhost 127.0.0.1 ::1",
		"10.0.0.5:9819": "localhost 127.0.0.1 ::1 10.0.0.5",
		"127.0.0.1:0":   "localhost 127.0.0.1 ::1",
	} {
		got := servingHosts(listen)
		if got[0] != host || strings.Join(got[1:], " ") != want {
			t.Errorf("servingHosts(%q) = %v, want %s then %s", listen, got, host, want)
		}
	}
}
