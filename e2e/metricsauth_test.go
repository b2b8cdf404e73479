package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/regghost/regghost/internal/etcdtest"
)

// monitoringCRDs are the two prometheus-operator kinds the chart renders,
// as far as kube-apiserver needs to take them (their full schemas are
// prometheus-operator's; --dry-run=server checks the chart's other objects
// against the real ones).
const monitoringCRDs = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: servicemonitors.monitoring.coreos.com}
spec:
  group: monitoring.coreos.com
  scope: Namespaced
  names: {plural: servicemonitors, singular: servicemonitor, kind: ServiceMonitor, listKind: ServiceMonitorList}
  versions:
    - name: v1
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: prometheusrules.monitoring.coreos.com}
spec:
  group: monitoring.coreos.com
  scope: Namespaced
  names: {plural: prometheusrules, singular: prometheusrule, kind: PrometheusRule, listKind: PrometheusRuleList}
  versions:
    - name: v1
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`

// kubectl runs the real kubectl as the cluster's admin and returns its
// standard output; a failure fails the test.
func (c *cluster) kubectl(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(binsFor(t).kubectl, append([]string{"--kubeconfig", c.kubeconfig}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
	}
	return out.String()
}

// token is a new token of ServiceAccount ns/name (kubectl create token).
func (c *cluster) token(t *testing.T, ns, name string) string {
	t.Helper()
	return strings.TrimSpace(c.kubectl(t, "", "-n", ns, "create", "token", name))
}

// writeKubeconfig writes a kubeconfig for this cluster's API server with
// user (a kubeconfig user entry, as YAML flow).
func (c *cluster) writeKubeconfig(t *testing.T, path, user string) {
	t.Helper()
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: e2e, cluster: {server: %q, insecure-skip-tls-verify: true}}]
users: [{name: u, user: %s}]
contexts: [{name: e2e, context: {cluster: e2e, user: u}}]
current-context: e2e
`, c.rest.Host, user)
	mustNoErr(t, "write kubeconfig", os.WriteFile(path, []byte(kc), 0o600))
}

// issueClientCert signs a client certificate for common name cn with the
// cluster's CA, as kubeadm kubeconfig user does with the cluster's, and
// returns it and its key as PEM.
func (p pki) issueClientCert(t *testing.T, cn string) (certPEM, keyPEM []byte) {
	t.Helper()
	caPEM, err := os.ReadFile(p.CA)
	mustNoErr(t, "read CA", err)
	block, _ := pem.Decode(caPEM)
	caCert, err := x509.ParseCertificate(block.Bytes)
	mustNoErr(t, "parse CA", err)
	keyFile, err := os.ReadFile(p.CAKey)
	mustNoErr(t, "read CA key", err)
	block, _ = pem.Decode(keyFile)
	caKey, err := x509.ParseECPrivateKey(block.Bytes)
	mustNoErr(t, "parse CA key", err)
	key, _, der := newCert(t, caCert, caKey, &x509.Certificate{
		Subject: pkix.Name{CommonName: cn}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature,
	})
	keyDER, err := x509.MarshalECPrivateKey(key)
	mustNoErr(t, "marshal key", err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

// tlsServe is a running `regghost serve --metrics-auth delegated` behind
// exporter-toolkit's TLS.
type tlsServe struct {
	url  string
	http *http.Client
	log  string
}

// get fetches a path of the endpoint with a bearer token ("" for none).
func (s *tlsServe) get(path, token string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, s.url+path, nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// peerCert is the certificate the endpoint shows a new connection.
func (s *tlsServe) peerCert(t *testing.T) *x509.Certificate {
	t.Helper()
	resp, err := s.http.Get(s.url + "/healthz")
	if err != nil {
		t.Fatalf("GET /healthz: %v", err)
	}
	resp.Body.Close()
	if resp.TLS == nil || len(resp.TLS.PeerCertificates) == 0 {
		t.Fatalf("GET /healthz: no TLS")
	}
	return resp.TLS.PeerCertificates[0]
}

// plainGet sends a bearer token over plain HTTP to a TLS endpoint's
// address: it must not get the metrics (Go's TLS server answers 400 to a
// request in clear).
func plainGet(t *testing.T, addr, token string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/metrics", nil)
	mustNoErr(t, "new request", err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return // refused outright: no metrics either
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || strings.Contains(string(b), "regghost_") {
		t.Errorf("plain HTTP with a bearer token to the TLS port: %d %q, want 400 without the metrics", resp.StatusCode, b)
	}
}

// metric is the value of one series of /metrics, read with token.
func (s *tlsServe) metric(t *testing.T, token, series string) (float64, bool) {
	t.Helper()
	code, body, err := s.get("/metrics", token)
	if err != nil || code != http.StatusOK {
		t.Fatalf("/metrics: %d %v %s", code, err, body)
	}
	for _, l := range strings.Split(body, "\n") {
		if rest, ok := strings.CutPrefix(l, series+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v, err == nil
		}
	}
	return 0, false
}

// waitLog waits until the serve log holds line.
func (s *tlsServe) waitLog(t *testing.T, line string) {
	t.Helper()
	waitFor(t, 60*time.Second, "serve to log "+line, func() error {
		b, err := os.ReadFile(s.log)
		if err != nil {
			return err
		}
		if !strings.Contains(string(b), line) {
			return fmt.Errorf("not yet in %s", s.log)
		}
		return nil
	})
}

// waitCycles waits until serve has finished n more scan cycles.
func (s *tlsServe) waitCycles(t *testing.T, token string, n int) {
	t.Helper()
	start, _ := s.metric(t, token, "regghost_scans_total")
	waitFor(t, 120*time.Second, fmt.Sprintf("%d more scan cycles", n), func() error {
		if now, _ := s.metric(t, token, "regghost_scans_total"); now < start+float64(n) {
			return fmt.Errorf("%g cycles, want %g", now, start+float64(n))
		}
		return nil
	})
}

// scanVerdicts runs `regghost scan -o json` with kubeconfig and returns its
// verdicts and whether its API server witness check was done.
func (c *cluster) scanVerdicts(t *testing.T, kubeconfig string) (string, bool) {
	t.Helper()
	out, errOut, code := runBinary(t, "", append([]string{"scan", "-o", "json", "--terminating-after", "1ns", "--kubeconfig", kubeconfig}, c.etcdArgs()...)...)
	if code != 0 && code != 3 {
		t.Fatalf("scan with %s exited %d: %s", kubeconfig, code, errOut)
	}
	rep := decodeReport(t, out)
	done := false
	for _, ch := range rep.Checks {
		if ch.Name == "api server witness" {
			done = ch.Done
		}
	}
	if !rep.APIWitness {
		t.Fatalf("scan with %s had no API server witness: %s", kubeconfig, errOut)
	}
	return verdicts(rep), done
}

// TestServeDelegatedMetricsAuth: the chart and the static pod's RBAC
// applied to a real kube-apiserver with RBAC on, and regghost serve
// --metrics-auth delegated behind exporter-toolkit's TLS (a web
// configuration's certificate, and serve's own in --cert-dir):
//   - the chart applies with --dry-run=server, then for real;
//   - the witness's roles (the chart's ServiceAccount, the static pod's
//     user regghost with a client certificate) are all a scan needs: its
//     verdicts are the admin's (a ghost custom resource too, granted by
//     name as values.yaml and rbac.yaml say), and they grant no list of
//     Secrets, no write, no get of a subresource (nodes/proxy, pods/exec);
//   - a scrape without a token is 401, with a ServiceAccount's that has no
//     grant 403, with the chart's scraper's 200 (and 403 on any other
//     path); /healthz and /readyz are open; a real Prometheus scrapes it
//     with the token as the ServiceMonitor says;
//   - no bearer token crosses the network in clear: a plain-HTTP request
//     with the scraper's token to the TLS port gets 400, not the metrics;
//     serve run as the static pod and the chart run it (--cert-dir) makes
//     a self-signed certificate there, serves it over HTTPS to the
//     scraper's token, and serves a new one without a restart once it is
//     removed; delegated auth over plain HTTP (and --insecure-http off
//     loopback) is refused at start, exit 2, in one line;
//   - the kubeconfig rewritten on disk (another identity) is taken without
//     a restart: once the first identity is deleted, scrapes are still
//     reviewed and the witness still answers.
func TestServeDelegatedMetricsAuth(t *testing.T) {
	parallel(t)
	c := startCluster(t, clusterOptions{})
	dir := t.TempDir()

	c.kubectl(t, monitoringCRDs, "apply", "-f", "-")
	c.kubectl(t, "", "wait", "--for", "condition=established", "--timeout", "60s",
		"crd/servicemonitors.monitoring.coreos.com", "crd/prometheusrules.monitoring.coreos.com")
	// Applied, not created: a production-shaped cluster may hold it already.
	c.kubectl(t, "apiVersion: v1\nkind: Namespace\nmetadata: {name: monitoring}\n", "apply", "-f", "-")
	rendered := helm(t, "template", "ghosts", chartDir, "--namespace", "monitoring", "--set", "witness.customResources={widgets.example.com,gadgets.example.com}")
	t.Run("the chart applies with --dry-run=server", func(t *testing.T) {
		out := c.kubectl(t, rendered, "apply", "--dry-run=server", "-f", "-")
		for _, want := range []string{"servicemonitor.monitoring.coreos.com/ghosts-regghost created (server dry run)",
			"clusterrole.rbac.authorization.k8s.io/ghosts-regghost-metrics-reader created (server dry run)",
			"secret/ghosts-regghost-scraper-token created (server dry run)"} {
			if !strings.Contains(out, want) {
				t.Errorf("kubectl apply --dry-run=server lacks %q:\n%s", want, out)
			}
		}
	})
	// For real: serve below runs with the chart's ServiceAccount and is
	// scraped with the chart's scraper.
	c.kubectl(t, rendered, "apply", "-f", "-")
	c.kubectl(t, "", "apply", "-f", "../deploy/static-pod/rbac.yaml")

	plantGhosts(t, c)
	c.createNamespace(t, "metrics-ns")
	c.createHeadlessService(t, "metrics-ns", "metrics")
	c.createAggregatedAPI(t, "custom.metrics.example.com", "v1beta1", "metrics-ns", "metrics", nil)
	c.forceDelete(t, "/registry/namespaces/metrics-ns")
	c.forceDelete(t, "/registry/services/specs/metrics-ns/metrics")
	// A custom resource whose CRD is served, in a namespace force-deleted:
	// the witness asks the API server about it by name.
	c.createNamespace(t, "cr-ns")
	c.createCR(t, "example.com", "gadgets", "Gadget", "cr-ns", "g2")
	c.forceDelete(t, "/registry/namespaces/cr-ns")
	// The static pod's grant for custom resources, as rbac.yaml says: the
	// script beside it, by name, for the CRDs served; run twice, as after
	// new CRDs.
	for range 2 {
		grant := exec.Command("sh", "../deploy/static-pod/grant-custom-resources.sh", "--kubeconfig", c.kubeconfig)
		grant.Env = append(os.Environ(), "KUBECTL="+binsFor(t).kubectl, "HOME="+t.TempDir())
		out, err := grant.CombinedOutput()
		mustNoErr(t, "grant-custom-resources.sh: "+string(out), err)
	}
	role := c.kubectl(t, "", "get", "clusterrole", "regghost-custom-resources", "-o", "jsonpath={.rules}")
	for _, want := range []string{`"apiGroups":["example.com"],"resources":["gadgets"],"verbs":["get"]`, `"resources":["servicemonitors"]`} {
		if !strings.Contains(role, want) {
			t.Errorf("regghost-custom-resources lacks %s: %s", want, role)
		}
	}
	if strings.Contains(role, `"widgets"`) || strings.Contains(role, "*") {
		t.Errorf("regghost-custom-resources grants a CRD that is gone, or a wildcard: %s", role)
	}

	chartConf, staticConf := filepath.Join(dir, "chart.conf"), filepath.Join(dir, "regghost.conf")
	chartToken := c.token(t, "monitoring", "ghosts-regghost")
	c.writeKubeconfig(t, chartConf, fmt.Sprintf("{token: %q}", chartToken))
	certPEM, keyPEM := c.pki.issueClientCert(t, "regghost")
	c.writeKubeconfig(t, staticConf, fmt.Sprintf("{client-certificate-data: %s, client-key-data: %s}",
		base64.StdEncoding.EncodeToString(certPEM), base64.StdEncoding.EncodeToString(keyPEM)))

	t.Run("the witness's roles are all a scan needs, and no more", func(t *testing.T) {
		want, wantDone := c.scanVerdicts(t, c.kubeconfig)
		for _, kc := range []string{chartConf, staticConf} {
			if got, done := c.scanVerdicts(t, kc); got != want || done != wantDone {
				t.Errorf("scan with %s judged otherwise than with admin rights (witness check done %v, want %v):\n%s\nwith admin:\n%s", filepath.Base(kc), done, wantDone, got, want)
			}
		}
		for _, who := range []string{"system:serviceaccount:monitoring:ghosts-regghost", "regghost"} {
			for _, q := range []struct {
				args []string
				want string
			}{
				{[]string{"get", "secrets", "-n", "kube-system"}, "yes"},
				{[]string{"list", "customresourcedefinitions.apiextensions.k8s.io"}, "yes"},
				{[]string{"list", "endpointslices.discovery.k8s.io", "-n", "default"}, "yes"},
				{[]string{"create", "tokenreviews.authentication.k8s.io"}, "yes"},
				{[]string{"create", "subjectaccessreviews.authorization.k8s.io"}, "yes"},
				{[]string{"list", "secrets", "-A"}, "no"},
				{[]string{"watch", "pods", "-A"}, "no"},
				{[]string{"list", "endpointslices.discovery.k8s.io", "-n", "kube-system"}, "no"},
				{[]string{"delete", "pods", "-n", "default"}, "no"},
				{[]string{"update", "namespaces"}, "no"},
				{[]string{"patch", "customresourcedefinitions.apiextensions.k8s.io"}, "no"},
				{[]string{"get", "/metrics"}, "no"},
				{[]string{"get", "gadgets.example.com", "-n", "cr-ns"}, "yes"},
				// get on these subresources reaches a kubelet or a container.
				{[]string{"get", "nodes", "--subresource", "proxy"}, "no"},
				{[]string{"get", "pods", "--subresource", "exec", "-n", "default"}, "no"},
				{[]string{"get", "pods", "--subresource", "attach", "-n", "default"}, "no"},
				{[]string{"get", "pods", "--subresource", "log", "-n", "default"}, "no"},
				{[]string{"get", "services", "--subresource", "proxy", "-n", "default"}, "no"},
				{[]string{"get", "serviceaccounts", "--subresource", "token", "-n", "default"}, "no"},
			} {
				cmd := exec.Command(binsFor(t).kubectl, append([]string{"--kubeconfig", c.kubeconfig, "auth", "can-i", "--as", who}, q.args...)...)
				out, _ := cmd.Output() // can-i exits 1 for "no"
				if got := strings.TrimSpace(string(out)); got != q.want {
					t.Errorf("%s can-i %s: %q, want %q", who, strings.Join(q.args, " "), got, q.want)
				}
			}
		}
	})

	serveConf := filepath.Join(dir, "serve.conf")
	b, err := os.ReadFile(chartConf)
	mustNoErr(t, "read chart.conf", err)
	mustNoErr(t, "write serve.conf", os.WriteFile(serveConf, b, 0o600))
	webConfig := filepath.Join(dir, "web.yml")
	mustNoErr(t, "write web config", os.WriteFile(webConfig, []byte(fmt.Sprintf("tls_server_config:\n  cert_file: %s\n  key_file: %s\n", c.pki.ServerCert, c.pki.ServerKey)), 0o600))
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	s := &tlsServe{url: "https://" + addr, log: filepath.Join(dir, "serve.log")}
	caPEM, err := os.ReadFile(c.pki.CA)
	mustNoErr(t, "read CA", err)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	s.http = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	startProcess(t, "regghost serve", s.log, bins.regghost, append([]string{"serve", "--listen-address", addr, "--web-config-file", webConfig,
		"--metrics-auth", "delegated", "--kubeconfig", serveConf, "--interval", "1s", "--terminating-after", "1ns"}, c.etcdArgs()...)...)
	waitFor(t, 60*time.Second, "regghost serve ready", func() error {
		code, body, err := s.get("/readyz", "")
		if err != nil {
			return err
		}
		if code != http.StatusOK {
			return fmt.Errorf("/readyz: %d %s", code, body)
		}
		return nil
	})

	c.kubectl(t, "", "-n", "monitoring", "create", "serviceaccount", "nobody")
	scraper := c.token(t, "monitoring", "ghosts-regghost-scraper")
	t.Run("who may read /metrics", func(t *testing.T) {
		tests := []struct {
			name, path, token string
			want              int
		}{
			{"no token", "/metrics", "", http.StatusUnauthorized},
			{"a token the API server does not know", "/metrics", "not-a-token", http.StatusUnauthorized},
			{"a ServiceAccount without the grant", "/metrics", c.token(t, "monitoring", "nobody"), http.StatusForbidden},
			{"the chart's scraper", "/metrics", scraper, http.StatusOK},
			{"the chart's scraper, another path", "/", scraper, http.StatusForbidden},
			{"the liveness probe", "/healthz", "", http.StatusOK},
			{"the readiness probe", "/readyz", "", http.StatusOK},
		}
		for _, tt := range tests {
			code, body, err := s.get(tt.path, tt.token)
			if err != nil || code != tt.want {
				t.Errorf("%s: GET %s: %d %v %q, want %d", tt.name, tt.path, code, err, body, tt.want)
			}
			if code == http.StatusOK && tt.path == "/metrics" && !strings.Contains(body, "regghost_scans_total") {
				t.Errorf("%s: /metrics has no regghost_scans_total", tt.name)
			}
		}
	})

	t.Run("plain HTTP to the TLS port gets no metrics", func(t *testing.T) {
		plainGet(t, addr, scraper)
	})

	t.Run("the witness answers with the chart's ServiceAccount", func(t *testing.T) {
		s.waitCycles(t, scraper, 1)
		if v, ok := s.metric(t, scraper, "regghost_api_witness"); !ok || v != 1 {
			t.Errorf("regghost_api_witness = %v (present %v), want 1", v, ok)
		}
	})

	t.Run("Prometheus scrapes with the ServiceMonitor's bearer token", func(t *testing.T) {
		pdir := t.TempDir()
		tokenFile := filepath.Join(pdir, "token")
		mustNoErr(t, "write token", os.WriteFile(tokenFile, []byte(scraper), 0o600))
		// What prometheus-operator makes of the chart's ServiceMonitor
		// endpoint (authorization: Bearer from the scraper's token Secret),
		// with the CA of exporter-toolkit's certificate.
		p := startPrometheus(t, pdir, fmt.Sprintf(`global: {scrape_interval: 1s}
scrape_configs:
  - job_name: regghost
    scheme: https
    tls_config: {ca_file: %s}
    authorization: {type: Bearer, credentials_file: %s}
    static_configs: [{targets: ["%s"]}]
`, c.pki.CA, tokenFile, addr))
		waitFor(t, 60*time.Second, "Prometheus scrapes regghost", func() error {
			if v, ok, err := p.value(`up{job="regghost"}`); err != nil || !ok || v != 1 {
				return fmt.Errorf("up = %v (present %v, %v)", v, ok, err)
			}
			if v, ok, err := p.value(`regghost_api_witness{job="regghost"}`); err != nil || !ok || v != 1 {
				return fmt.Errorf("regghost_api_witness = %v (present %v, %v)", v, ok, err)
			}
			return nil
		})
	})

	t.Run("serve's own certificate, as the static pod and the chart run it", func(t *testing.T) {
		certDir := filepath.Join(t.TempDir(), "certs")
		ownAddr := "127.0.0.1:" + strconv.Itoa(freePort(t))
		// As the ServiceMonitor scrapes it: HTTPS, verification skipped
		// (insecureSkipVerify: no CA vouches for a self-signed certificate).
		own := &tlsServe{url: "https://" + ownAddr, log: filepath.Join(t.TempDir(), "serve.log"),
			http: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}}
		startProcess(t, "regghost serve --cert-dir", own.log, bins.regghost, append([]string{"serve", "--listen-address", ownAddr, "--cert-dir", certDir,
			"--metrics-auth", "delegated", "--kubeconfig", serveConf, "--interval", "10m", "--terminating-after", "1ns"}, c.etcdArgs()...)...)
		waitFor(t, 60*time.Second, "regghost serve --cert-dir ready", func() error {
			code, body, err := own.get("/readyz", "")
			if err != nil {
				return err
			}
			if code != http.StatusOK {
				return fmt.Errorf("/readyz: %d %s", code, body)
			}
			return nil
		})
		for _, tt := range []struct {
			name, token string
			want        int
		}{
			{"no token", "", http.StatusUnauthorized},
			{"the chart's scraper", scraper, http.StatusOK},
		} {
			code, body, err := own.get("/metrics", tt.token)
			if err != nil || code != tt.want {
				t.Errorf("%s: GET /metrics: %d %v %q, want %d", tt.name, code, err, body, tt.want)
			}
		}
		plainGet(t, ownAddr, scraper)

		// The certificate served is the one in --cert-dir: a chain for
		// localhost its own CA vouches for.
		certFile := filepath.Join(certDir, "regghost.crt")
		pemBytes, err := os.ReadFile(certFile)
		mustNoErr(t, "read regghost.crt", err)
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(pemBytes)
		block, _ := pem.Decode(pemBytes)
		leaf, err := x509.ParseCertificate(block.Bytes)
		mustNoErr(t, "parse regghost.crt", err)
		if served := own.peerCert(t); !served.Equal(leaf) {
			t.Errorf("served %s, --cert-dir holds %s", served.Subject, leaf.Subject)
		}
		verified := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: "localhost"}}}
		if resp, err := verified.Get(own.url + "/healthz"); err != nil {
			t.Errorf("the served certificate against regghost.crt's CA for localhost: %v", err)
		} else {
			resp.Body.Close()
		}

		// Removed, it is made anew and served without a restart.
		mustNoErr(t, "remove regghost.crt", os.Remove(certFile))
		waitFor(t, 60*time.Second, "a new certificate served", func() error {
			if served := own.peerCert(t); served.Equal(leaf) {
				return fmt.Errorf("still the removed certificate")
			}
			return nil
		})
		if b, _ := os.ReadFile(own.log); strings.Count(string(b), "serving certificate made") != 2 {
			t.Errorf("serve's log does not say it made a certificate at start and again:\n%s", b)
		}
		if code, _, err := own.get("/metrics", scraper); err != nil || code != http.StatusOK {
			t.Errorf("/metrics over the new certificate: %d %v", code, err)
		}
	})

	t.Run("a rewritten kubeconfig is taken without a restart", func(t *testing.T) {
		b, err := os.ReadFile(staticConf)
		mustNoErr(t, "read regghost.conf", err)
		mustNoErr(t, "rewrite serve.conf", os.WriteFile(serveConf, b, 0o600))
		s.waitLog(t, "the kubeconfig changed on disk; API clients rebuilt")
		// The first identity goes: its token is refused from now on, so
		// only the rewritten kubeconfig can review a scrape or witness.
		mustNoErr(t, "delete the chart's ServiceAccount", c.kube.CoreV1().ServiceAccounts("monitoring").Delete(context.Background(), "ghosts-regghost", metav1.DeleteOptions{}))
		waitFor(t, 60*time.Second, "the old token refused", func() error {
			r, err := c.kube.AuthenticationV1().TokenReviews().Create(context.Background(), &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: chartToken}}, metav1.CreateOptions{})
			if err != nil {
				return err
			}
			if r.Status.Authenticated {
				return fmt.Errorf("still authenticated as %s", r.Status.User.Username)
			}
			return nil
		})
		// A new token: no answer about it is cached, serve must ask.
		fresh := c.token(t, "monitoring", "ghosts-regghost-scraper")
		if code, body, err := s.get("/metrics", fresh); err != nil || code != http.StatusOK {
			t.Fatalf("/metrics with a new scraper token after the identity changed: %d %v %s", code, err, body)
		}
		if code, _, err := s.get("/metrics", c.token(t, "monitoring", "nobody")); err != nil || code != http.StatusForbidden {
			t.Errorf("/metrics with a new token without the grant: %d %v, want 403", code, err)
		}
		s.waitCycles(t, fresh, 2)
		if v, ok := s.metric(t, fresh, "regghost_api_witness"); !ok || v != 1 {
			t.Errorf("regghost_api_witness after the identity changed = %v (present %v), want 1", v, ok)
		}
	})

	t.Run("delegated auth without a usable kubeconfig is refused at start", func(t *testing.T) {
		_, errOut, code := runBinary(t, "", append([]string{"serve", "--listen-address", "127.0.0.1:0", "--metrics-auth", "delegated",
			"--cert-dir", t.TempDir(), "--kubeconfig", filepath.Join(dir, "absent.conf")}, c.etcdArgs()...)...)
		lines := strings.Split(strings.TrimSpace(etcdtest.WithoutUsing(errOut)), "\n")
		// A --kubeconfig given that cannot be used is refused first, for
		// every command; serve's own refusal names --metrics-auth.
		absent := "--kubeconfig " + filepath.Join(dir, "absent.conf") + " cannot be used"
		if code == 0 || len(lines) != 1 || !strings.Contains(lines[0], "--metrics-auth=delegated") && !strings.Contains(lines[0], absent) {
			t.Errorf("exit %d, stderr %q; want a failure in one line naming --metrics-auth=delegated or the --kubeconfig", code, errOut)
		}
	})

	t.Run("delegated auth over plain HTTP is refused at start", func(t *testing.T) {
		port := strconv.Itoa(freePort(t))
		for _, tt := range []struct {
			name string
			args []string
			want string
		}{
			{"every interface", []string{"--listen-address", ":" + port}, "serve TLS with --cert-dir DIR"},
			{"a node address", []string{"--listen-address", "0.0.0.0:" + port}, "serve TLS with --cert-dir DIR"},
			{"loopback without --insecure-http", []string{"--listen-address", "127.0.0.1:" + port}, "add --insecure-http"},
			{"--insecure-http off loopback", []string{"--listen-address", "0.0.0.0:" + port, "--insecure-http"}, "--insecure-http needs a loopback --listen-address"},
		} {
			_, errOut, code := runBinary(t, "", append(append([]string{"serve", "--metrics-auth", "delegated", "--kubeconfig", serveConf}, tt.args...), c.etcdArgs()...)...)
			lines := strings.Split(strings.TrimSpace(etcdtest.WithoutUsing(errOut)), "\n")
			if code != 2 || len(lines) != 1 || !strings.Contains(lines[0], tt.want) {
				t.Errorf("%s: exit %d, stderr %q; want exit 2 and one line saying %q", tt.name, code, errOut, tt.want)
			}
		}
	})
}

// TestServeTakesRotatedEtcdCertificate: etcd's client certificate files
// rewritten with a new certificate (same CA, another name) while serve
// runs are taken at once. etcd runs with authentication on, each client
// certificate's common name its user: once serve said it connected with
// the new files, the old certificate's user is deleted, so a request over
// a connection made with the old certificate would be refused. Every later
// cycle succeeds: none failed, none was counted under etcd.
func TestServeTakesRotatedEtcdCertificate(t *testing.T) {
	parallel(t)
	c := startCluster(t, clusterOptions{noAPIServer: true})
	ctx := context.Background()
	c.put(t, "/registry/namespaces/default", []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"default","uid":"5b0c7f36-6a2b-4c1e-9d3e-1f2a3b4c5d6e"}}`))
	c.put(t, "/registry/configmaps/gone/a", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"gone","uid":"uid-a"}}`))
	// etcd's users: root (to turn auth on), the test's own client
	// ("regghost", as root) and serve's two certificates, which may read.
	_, err := c.etcd.RoleAdd(ctx, "root")
	mustNoErr(t, "add role root", err)
	_, err = c.etcd.RoleAdd(ctx, "reader")
	mustNoErr(t, "add role reader", err)
	_, err = c.etcd.RoleGrantPermission(ctx, "reader", "\x00", "\x00", clientv3.PermissionType(clientv3.PermRead)) // every key
	mustNoErr(t, "grant reader", err)
	for user, role := range map[string]string{"root": "root", "regghost": "root", "serve-a": "reader", "serve-b": "reader"} {
		_, err := c.etcd.UserAddWithOptions(ctx, user, "", &clientv3.UserAddOptions{NoPassword: true})
		mustNoErr(t, "add user "+user, err)
		_, err = c.etcd.UserGrantRole(ctx, user, role)
		mustNoErr(t, "grant "+role+" to "+user, err)
	}
	_, err = c.etcd.AuthEnable(ctx)
	mustNoErr(t, "enable auth", err)

	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "serve.crt"), filepath.Join(dir, "serve.key")
	writeCert := func(cn string) {
		cert, key := c.pki.issueClientCert(t, cn)
		// The key first, then the certificate: between the two the pair
		// does not match, as in a rotation by hand.
		mustNoErr(t, "write key", os.WriteFile(keyFile, key, 0o600))
		mustNoErr(t, "write cert", os.WriteFile(certFile, cert, 0o600))
	}
	writeCert("serve-a")
	s := &serveProcess{addr: "127.0.0.1:" + strconv.Itoa(freePort(t))}
	logPath := filepath.Join(dir, "serve.log")
	startProcess(t, "regghost serve", logPath, bins.regghost, "serve", "--listen-address", s.addr, "--no-api", "--interval", "200ms",
		"--endpoints", c.etcdURL, "--cacert", c.pki.CA, "--cert", certFile, "--key", keyFile)
	waitFor(t, 60*time.Second, "regghost serve ready", func() error {
		code, body, err := s.get("/readyz", false)
		if err != nil {
			return err
		}
		if code != http.StatusOK {
			return fmt.Errorf("/readyz: %d %s", code, body)
		}
		return nil
	})
	const objects = `regghost_objects{class="orphaned-namespace",namespace="gone",resource="configmaps"}`
	if v, ok := s.metric(t, objects); !ok || v != 1 {
		t.Fatalf("%s = %v (present %v), want 1 with the first certificate", objects, v, ok)
	}

	writeCert("serve-b")
	waitFor(t, 60*time.Second, "serve to connect with the new certificate", func() error {
		b, err := os.ReadFile(logPath)
		if err != nil {
			return err
		}
		if !strings.Contains(string(b), "connected afresh with them") {
			return fmt.Errorf("not yet in the log")
		}
		return nil
	})
	_, err = c.etcd.UserDelete(ctx, "serve-a")
	mustNoErr(t, "delete the old certificate's user", err)
	c.put(t, "/registry/configmaps/gone/b", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b","namespace":"gone","uid":"uid-b"}}`))
	s.waitCycles(t, 3)
	if v, ok := s.metric(t, objects); !ok || v != 2 {
		t.Errorf("%s = %v (present %v), want 2: a cycle after the old user went read etcd", objects, v, ok)
	}
	if v, _ := s.metric(t, "regghost_last_scan_success"); v != 1 {
		t.Errorf("regghost_last_scan_success = %v, want 1", v)
	}
	for _, reason := range []string{"etcd", "scan", "timeout"} {
		if v, _ := s.metric(t, `regghost_scan_errors_total{reason="`+reason+`"}`); v != 0 {
			b, _ := os.ReadFile(logPath)
			t.Errorf("regghost_scan_errors_total{reason=%q} = %v, want 0: no cycle may fail across the rotation\n%s", reason, v, b)
		}
	}
}
