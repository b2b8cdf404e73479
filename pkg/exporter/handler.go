package exporter

import (
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Registry returns a registry with c, and the Go runtime and process
// collectors (process_resident_memory_bytes shows the exporter's RSS).
func Registry(c *Collector, extra ...prometheus.Collector) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(c, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(extra...)
	return reg
}

// Guard wraps the handler of a protected path (metricsauth.Delegated.Wrap).
type Guard func(http.Handler) http.Handler

// Handler serves /metrics from reg, /healthz (the process is up) and
// /readyz (a scan has succeeded, so /metrics has findings to say), to
// anyone who reaches it (see GuardedHandler).
func Handler(reg *prometheus.Registry, c *Collector) http.Handler {
	return GuardedHandler(reg, c, nil)
}

// GuardedHandler is Handler with every path but /healthz and /readyz
// behind guard (none when nil): the kubelet's probes carry no
// credentials, and those paths say nothing of the findings.
func GuardedHandler(reg *prometheus.Registry, c *Collector, guard Guard) http.Handler {
	if guard == nil {
		guard = func(h http.Handler) http.Handler { return h }
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", guard(promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !c.Ready() {
			http.Error(w, "no scan has succeeded yet", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.Handle("/", guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintln(w, "regghost exporter: /metrics, /healthz, /readyz")
	})))
	return mux
}
