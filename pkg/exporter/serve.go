package exporter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/exporter-toolkit/web"
)

// ServeOptions say where and how the metrics are served.
type ServeOptions struct {
	// Listen is the address; WebConfig exporter-toolkit's web configuration
	// file (TLS, basic auth), "" for none.
	Listen, WebConfig string
	// Guard, if set, decides who may read what (delegated auth).
	Guard Guard
	// Loop scans and fills Collector.
	Loop      *Loop
	Collector *Collector
	Log       *slog.Logger
	// Fields are added to the "serving metrics" log line.
	Fields []any
	// Extra are collectors served beside Collector (BackupCollector).
	Extra []prometheus.Collector
	// Watches run beside the scan loop until it stops (MembersWatch).
	Watches []interface{ Run(context.Context) }
}

// Serve listens, serves /metrics, /healthz and /readyz, and runs the scan
// loop until ctx ends (then shuts the server down and waits for the cycle
// in flight) or the endpoint fails (then the loop stops: scanning on would
// serve nobody).
func Serve(ctx context.Context, o ServeOptions) error {
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", o.Listen, err)
	}
	srv := &http.Server{Handler: GuardedHandler(Registry(o.Collector, o.Extra...), o.Collector, o.Guard), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() {
		no := false
		served <- web.Serve(ln, srv, &web.FlagConfig{WebListenAddresses: &[]string{o.Listen}, WebSystemdSocket: &no, WebConfigFile: &o.WebConfig}, o.Log)
	}()
	o.Log.Info("serving metrics", append([]any{"address", ln.Addr().String(), "interval", o.Loop.Interval.String()}, o.Fields...)...)
	looped := make(chan struct{})
	lctx, stopLoop := context.WithCancel(ctx)
	defer stopLoop()
	var watches sync.WaitGroup
	for _, w := range o.Watches {
		watches.Go(func() { w.Run(lctx) })
	}
	go func() { o.Loop.Run(lctx); watches.Wait(); close(looped) }()
	select {
	case err = <-served:
		stopLoop()
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = srv.Shutdown(sctx)
		cancel()
		err = <-served
	}
	<-looped
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve %s: %w", o.Listen, err)
	}
	return nil
}
