package main

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// exporterTable runs `regghost serve` on the loaded etcd for cycles scan
// cycles (--interval 1s, default pace, no API server) and reports, per
// cycle, what the exporter says it asked of etcd, what etcd says it served,
// and the exporter's memory after the cycle: flat over the cycles when one
// client is shared and nothing is kept from one cycle to the next.
func exporterTable(ctx context.Context, e *loadedEtcd, t tools, keys, cycles int) (string, error) {
	addr := fmt.Sprintf("127.0.0.1:%d", freePort())
	cmd := exec.Command(t.regghost, "serve", "--no-api", "--endpoints", e.ep, "--listen-address", addr, "--interval", "1s", "--jitter", "0",
		"--command-timeout", "30m")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	type row struct {
		cycle                      int
		requests, received         float64
		etcdRanges, etcdSent       float64
		duration, rss, peakAnonKiB float64
	}
	var rows []row
	var peakAnon int64
	seen := 0.0
	before, err := metrics(e.ep)
	if err != nil {
		return "", err
	}
	deadline := time.Now().Add(time.Duration(cycles) * 10 * time.Minute)
	for len(rows) < cycles && time.Now().Before(deadline) {
		if a := rssAnon(cmd.Process.Pid); a > peakAnon {
			peakAnon = a
		}
		m, err := scrape("http://" + addr + "/metrics")
		if err != nil || m["regghost_scans_total"] <= seen {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		seen = m["regghost_scans_total"]
		if m["regghost_last_scan_success"] != 1 {
			return "", fmt.Errorf("serve cycle %g failed", seen)
		}
		after, err := metrics(e.ep)
		if err != nil {
			return "", err
		}
		rows = append(rows, row{cycle: int(seen), requests: m["regghost_scan_etcd_requests"], received: m["regghost_scan_etcd_received_bytes"],
			etcdRanges: after["ranges"] - before["ranges"], etcdSent: after["sent"] - before["sent"],
			duration: m["regghost_scan_duration_seconds"], rss: m["process_resident_memory_bytes"], peakAnonKiB: float64(peakAnon)})
		fmt.Printf("  serve cycle %2d: %4.0f requests, %4.0f MiB received, etcd served %4.0f ranges, %s, RSS %4.0f MiB, peak anon %4.0f MiB\n",
			int(seen), rows[len(rows)-1].requests, rows[len(rows)-1].received/(1<<20), rows[len(rows)-1].etcdRanges,
			time.Duration(rows[len(rows)-1].duration*float64(time.Second)).Round(time.Millisecond), rows[len(rows)-1].rss/(1<<20), float64(peakAnon)/1024)
		// etcd's counters between two scrapes also hold the next cycle's
		// start: read them again right after this one.
		before = after
	}
	if len(rows) == 0 {
		return "", fmt.Errorf("no serve cycle finished")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nregghost serve on etcd %s, %d keys (--interval 1s, default pace, --no-api): %d cycles on one etcd client\n\n", e.version, keys, len(rows))
	fmt.Fprintf(&b, "| cycle | scan | etcd requests (serve's count) | bytes from etcd (serve's count) | etcd range requests (etcd's count) | RSS after the cycle | peak RssAnon so far |\n| --- | --- | --- | --- | --- | --- | --- |\n")
	for i, r := range rows {
		if i > 2 && i != len(rows)-1 && (i+1)%5 != 0 {
			continue
		}
		fmt.Fprintf(&b, "| %d | %.2fs | %.0f | %.0f MiB | %.0f | %.0f MiB | %.0f MiB |\n", r.cycle, r.duration, r.requests, r.received/(1<<20), r.etcdRanges, r.rss/(1<<20), r.peakAnonKiB/1024)
	}
	fmt.Print(b.String())
	return b.String(), nil
}

// scrape reads the unlabelled samples of a /metrics page.
func scrape(url string) (map[string]float64, error) {
	m := map[string]float64{}
	err := eachSample(url, func(line, name string, v float64) {
		if !strings.Contains(name, "{") {
			m[name] = v
		}
	})
	return m, err
}
