package space

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// maxMetricsPage bounds what is read of a /metrics page.
const maxMetricsPage = 16 << 20

// MetricsReader reads a member's /metrics page at its client URL, with the
// TLS configuration of the etcd client (nil for plain HTTP): etcd serves
// /metrics there, behind the same client certificate check.
func MetricsReader(tlsConfig *tls.Config) func(ctx context.Context, url string) (string, error) {
	tr := &http.Transport{TLSClientConfig: tlsConfig, Proxy: nil, DisableKeepAlives: true}
	client := &http.Client{Transport: tr}
	return func(ctx context.Context, url string) (string, error) {
		if !strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "https://") {
			scheme := "http://"
			if tlsConfig != nil {
				scheme = "https://"
			}
			url = scheme + url
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(url, "/")+"/metrics", nil)
		if err != nil {
			return "", err
		}
		resp, err := client.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return "", fmt.Errorf("%s/metrics: %s", url, resp.Status)
		}
		b, err := io.ReadAll(io.LimitReader(resp.Body, maxMetricsPage))
		return string(b), err
	}
}
