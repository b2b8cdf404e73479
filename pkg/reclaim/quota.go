package reclaim

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// quotaMetric is the gauge every etcd since 3.4 exports with its quota.
const quotaMetric = "etcd_server_quota_backend_bytes"

// Where a quota was learned.
const (
	QuotaFromStatus  = "status"
	QuotaFromMetrics = "metrics"
	QuotaFromFlag    = "--quota-backend-bytes"
	QuotaAssumed     = "assumed"
)

// learnQuota finds m's quota: its Status (etcd 3.6+ reports dbSizeQuota),
// else its /metrics gauge, else the node's etcd manifest when m runs here,
// else --quota-backend-bytes (etcd's default unless given).
func learnQuota(ctx context.Context, o Options, m *Member) {
	ctx, cancel := context.WithTimeout(ctx, o.checkTimeout())
	defer cancel()
	var why []string
	if !m.answered {
		why = append(why, "it does not answer")
	} else {
		st, err := o.Client.Status(ctx, m.Endpoint)
		switch {
		case err != nil:
			why = append(why, "Status: "+oneLine(err))
		case st.DbSizeQuota != 0:
			m.Quota = Quota{Bytes: st.DbSizeQuota, Source: QuotaFromStatus}
			return
		default:
			why = append(why, "its Status has no quota (etcd before 3.6)")
		}
		q, err := metricsQuota(ctx, o, m.Endpoint)
		if err == nil {
			m.Quota = Quota{Bytes: q, Source: QuotaFromMetrics, Why: strings.Join(why, "; ")}
			return
		}
		why = append(why, "/metrics: "+oneLine(err))
	}
	if n := o.Node; n != nil && n.Name != "" && n.Name == m.Name {
		q := n.QuotaBytes
		if q == 0 {
			q = DefaultQuota
		}
		m.Quota = Quota{Bytes: q, Source: n.Source, Why: strings.Join(why, "; ")}
		return
	}
	src := QuotaAssumed
	if o.QuotaGiven {
		src = QuotaFromFlag
	}
	m.Quota = Quota{Bytes: o.quota(), Source: src, Why: strings.Join(why, "; ")}
}

// metricsQuota reads the quota gauge from the member's /metrics, on its
// client URL with the client's TLS files.
func metricsQuota(ctx context.Context, o Options, endpoint string) (int64, error) {
	url, err := metricsURL(endpoint, o.Config.TLS != nil)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	tr := &http.Transport{TLSClientConfig: o.Config.TLS}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s answers %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", url, err)
	}
	f := families[quotaMetric]
	if f == nil || len(f.GetMetric()) == 0 {
		return 0, fmt.Errorf("%s has no %s", url, quotaMetric)
	}
	return int64(f.GetMetric()[0].GetGauge().GetValue()), nil
}

// metricsURL is the /metrics URL of an etcd client endpoint ("host:port"
// or a URL).
func metricsURL(endpoint string, tls bool) (string, error) {
	switch {
	case strings.HasPrefix(endpoint, "unix:"), strings.HasPrefix(endpoint, "unixs:"):
		return "", fmt.Errorf("%s is a unix socket", endpoint)
	case strings.HasPrefix(endpoint, "http://"), strings.HasPrefix(endpoint, "https://"):
		return strings.TrimSuffix(endpoint, "/") + "/metrics", nil
	case tls:
		return "https://" + endpoint + "/metrics", nil
	}
	return "http://" + endpoint + "/metrics", nil
}
