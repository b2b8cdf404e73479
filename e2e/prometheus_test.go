package e2e

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/regghost/regghost/pkg/metricsauth"
)

// prometheusBin is the real Prometheus server, built from the module proxy
// into the Go build cache the first time a test asks for it.
var prometheusBin = sync.OnceValues(func() (string, error) {
	out, err := goCmd("tools/prometheus", "tool", "-n", "prometheus")
	return strings.TrimSpace(out), err
})

// promServer is a running Prometheus.
type promServer struct {
	url string
}

// startPrometheus runs Prometheus with config (a prometheus.yml body) in
// dir until the test ends, and waits until it is ready.
func startPrometheus(t *testing.T, dir, config string) *promServer {
	t.Helper()
	bin, err := prometheusBin()
	if err != nil {
		t.Fatalf("build prometheus: %v", err)
	}
	cfg := filepath.Join(dir, "prometheus.yml")
	mustNoErr(t, "write prometheus.yml", os.WriteFile(cfg, []byte(config), 0o600))
	port := freePort(t)
	startProcess(t, "prometheus", filepath.Join(dir, "prometheus.log"), bin,
		"--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
		"--web.listen-address=127.0.0.1:"+strconv.Itoa(port))
	p := &promServer{url: "http://127.0.0.1:" + strconv.Itoa(port)}
	waitFor(t, 60*time.Second, "prometheus ready", func() error {
		resp, err := http.Get(p.url + "/-/ready")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/-/ready: %s", resp.Status)
		}
		return nil
	})
	return p
}

// promSample is one series of an instant query's answer.
type promSample struct {
	Metric map[string]string
	Value  float64
}

// query runs an instant PromQL query. A query Prometheus cannot parse is an
// error naming why.
func (p *promServer) query(q string) ([]promSample, error) {
	resp, err := http.Get(p.url + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Status, ErrorType, Error string
		Data                     struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("query %s: %s: %w", q, resp.Status, err)
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("query %s: %s: %s", q, body.ErrorType, body.Error)
	}
	var out []promSample
	for _, r := range body.Data.Result {
		s, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("query %s: value %v: %w", q, r.Value[1], err)
		}
		out = append(out, promSample{Metric: r.Metric, Value: v})
	}
	return out, nil
}

// value runs a query expected to return one number (or nothing: ok false).
func (p *promServer) value(q string) (v float64, ok bool, err error) {
	s, err := p.query(q)
	if err != nil || len(s) == 0 {
		return 0, false, err
	}
	if len(s) > 1 {
		return 0, false, fmt.Errorf("query %s: %d series, want one", q, len(s))
	}
	return s[0].Value, true, nil
}

// rules are the rule groups Prometheus loaded.
func (p *promServer) rules(t *testing.T) (names map[string]string, err error) {
	t.Helper()
	resp, err := http.Get(p.url + "/api/v1/rules")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Data struct {
			Groups []struct {
				Rules []struct {
					Name, Health, LastError, Type string
				}
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, err
	}
	names = map[string]string{}
	for _, g := range body.Data.Groups {
		for _, r := range g.Rules {
			names[r.Name] = r.Health + " " + r.LastError
		}
	}
	return names, nil
}

// serveProcess is a running `regghost serve`.
type serveProcess struct {
	addr, user, password string
	// caFile is the serving certificate's bundle when it speaks TLS
	// (serve's own --cert-dir); "" for plain HTTP.
	caFile string
	http   *http.Client
}

// startServe runs regghost serve against the cluster with basic auth on the
// endpoint, over TLS (serve's own certificate, --cert-dir: basic auth's
// passwords never cross the network in clear), until the test ends.
func (c *cluster) startServe(t *testing.T, dir string, args ...string) *serveProcess {
	t.Helper()
	s := &serveProcess{addr: "127.0.0.1:" + strconv.Itoa(freePort(t)), user: "prometheus", password: "scrape-secret"}
	hash, err := bcrypt.GenerateFromPassword([]byte(s.password), bcrypt.MinCost)
	mustNoErr(t, "hash password", err)
	webConfig, certDir := filepath.Join(dir, "web.yml"), filepath.Join(dir, "certs")
	s.caFile = filepath.Join(certDir, metricsauth.CertFile)
	mustNoErr(t, "write web config", os.WriteFile(webConfig, []byte("basic_auth_users:\n  "+s.user+": "+string(hash)+"\n"), 0o600))
	full := append([]string{"serve", "--listen-address", s.addr, "--web-config-file", webConfig, "--cert-dir", certDir}, args...)
	full = append(full, c.etcdArgs()...)
	if c.kubeconfig != "" {
		full = append(full, "--kubeconfig", c.kubeconfig)
	} else {
		full = append(full, "--no-api")
	}
	startProcess(t, "regghost serve", filepath.Join(dir, "serve.log"), bins.regghost, full...)
	waitFor(t, 60*time.Second, "regghost serve ready", func() error {
		code, body, err := s.get("/readyz", true)
		if err != nil {
			return err
		}
		if code != http.StatusOK {
			return fmt.Errorf("/readyz: %d %s", code, body)
		}
		return nil
	})
	return s
}

// client is the HTTP client for the endpoint: it trusts serve's own
// certificate (read once it is there) when it speaks TLS.
func (s *serveProcess) client() (*http.Client, string, error) {
	if s.caFile == "" {
		return http.DefaultClient, "http://", nil
	}
	if s.http == nil {
		pem, err := os.ReadFile(s.caFile)
		if err != nil {
			return nil, "", err
		}
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(pem)
		s.http = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	}
	return s.http, "https://", nil
}

// get fetches a path of the endpoint, with the password when auth is set.
func (s *serveProcess) get(path string, auth bool) (int, string, error) {
	client, scheme, err := s.client()
	if err != nil {
		return 0, "", err
	}
	req, err := http.NewRequest(http.MethodGet, scheme+s.addr+path, nil)
	if err != nil {
		return 0, "", err
	}
	if auth {
		req.SetBasicAuth(s.user, s.password)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// metric returns the value of one series of /metrics, as text: the sample
// line whose name and labels are exactly series.
func (s *serveProcess) metric(t *testing.T, series string) (float64, bool) {
	t.Helper()
	code, body, err := s.get("/metrics", true)
	if err != nil || code != http.StatusOK {
		t.Fatalf("/metrics: %d %v", code, err)
	}
	for _, l := range strings.Split(body, "\n") {
		if rest, ok := strings.CutPrefix(l, series+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v, err == nil
		}
	}
	return 0, false
}

// waitCycles waits until serve has finished n more scan cycles.
func (s *serveProcess) waitCycles(t *testing.T, n int) {
	t.Helper()
	start, _ := s.metric(t, "regghost_scans_total")
	waitFor(t, 120*time.Second, fmt.Sprintf("%d more scan cycles", n), func() error {
		if now, _ := s.metric(t, "regghost_scans_total"); now < start+float64(n) {
			return fmt.Errorf("%g cycles, want %g", now, start+float64(n))
		}
		return nil
	})
}

// grafanaExprs returns every query of a Grafana dashboard, with its
// template variables given values Prometheus can parse.
func grafanaExprs(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	mustNoErr(t, "read dashboard", err)
	var walk func(any)
	var exprs []string
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if e, ok := x["expr"].(string); ok {
				exprs = append(exprs, e)
			}
			if q, ok := x["query"].(map[string]any); ok {
				if e, ok := q["query"].(string); ok {
					exprs = append(exprs, e)
				}
			}
			for _, y := range x {
				walk(y)
			}
		case []any:
			for _, y := range x {
				walk(y)
			}
		}
	}
	var doc any
	mustNoErr(t, "parse dashboard JSON", json.Unmarshal(b, &doc))
	walk(doc)
	r := strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h", "${namespace:regex}", ".*", "$namespace", ".*", "${namespace}", ".*", "$job", "regghost", "${job}", "regghost")
	for i, e := range exprs {
		e = r.Replace(e)
		// label_values(metric, label) is Grafana's, not PromQL: its metric is.
		if inner, ok := strings.CutPrefix(e, "label_values("); ok {
			if j := strings.LastIndex(inner, ","); j > 0 {
				e = inner[:j]
			}
		}
		exprs[i] = e
	}
	return exprs
}

// shortenFor rewrites the rules' "for:" durations to 1s, so that an alert
// that would fire after minutes fires in the test.
func shortenFor(rules []byte) []byte {
	var out bytes.Buffer
	for _, l := range strings.SplitAfter(string(rules), "\n") {
		if trimmed := strings.TrimSpace(l); strings.HasPrefix(trimmed, "for:") {
			l = l[:strings.Index(l, "for:")] + "for: 1s\n"
		}
		out.WriteString(l)
	}
	return out.Bytes()
}

// scrapeWithRules starts a real Prometheus in dir that scrapes s every
// second with its password and evaluates the chart's alert rules every
// second, their "for:" shortened to 1s.
func scrapeWithRules(t *testing.T, dir string, s *serveProcess) *promServer {
	t.Helper()
	rules, err := os.ReadFile(rulesFile)
	mustNoErr(t, "read rules", err)
	mustNoErr(t, "write rules", os.WriteFile(filepath.Join(dir, "rules.yml"), shortenFor(rules), 0o600))
	return startPrometheus(t, dir, fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [rules.yml]
scrape_configs:
  - job_name: regghost
    scheme: https
    tls_config: {ca_file: %s}
    basic_auth: {username: %s, password: %s}
    static_configs: [{targets: ["%s"]}]
`, s.caFile, s.user, s.password, s.addr))
}
