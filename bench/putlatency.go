package main

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// latencyRow is another client's put latency while something runs.
type latencyRow struct {
	name string
	// puts are the latencies of the puts made meanwhile.
	puts []time.Duration
	// runs is how many times the command ran, wall its median time.
	runs int
	wall time.Duration
}

func (r latencyRow) p(q float64) time.Duration {
	s := slices.Clone(r.puts)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// putLatency makes one small put every 20 ms through cli (every endpoint,
// in turn, as kube-apiservers on three nodes do) for at least d, while
// args run back to back (none: idle), and measures each put. It is what
// the API server's writes (leases, leader election) meet beside the
// command.
func putLatency(ctx context.Context, cli *clientv3.Client, name string, args []string, d time.Duration) (latencyRow, error) {
	row := latencyRow{name: name}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan []time.Duration, 1)
	go func() {
		var lat []time.Duration
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				done <- lat
				return
			case <-tick.C:
			}
			start := time.Now()
			pctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, err := cli.Put(pctx, fmt.Sprintf("/bench-writer/%d", i%100), "x")
			cancel()
			if err == nil {
				lat = append(lat, time.Since(start))
			}
		}
	}()
	var walls []time.Duration
	deadline := time.Now().Add(d)
	if len(args) == 0 {
		time.Sleep(d)
	}
	for len(args) > 0 && (len(walls) == 0 || time.Now().Before(deadline)) {
		start := time.Now()
		cmd := exec.Command(args[0], args[1:]...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return row, fmt.Errorf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
		walls = append(walls, time.Since(start))
	}
	stop()
	row.puts = <-done
	if len(walls) > 0 {
		slices.Sort(walls)
		row.runs, row.wall = len(walls), walls[len(walls)/2]
	}
	return row, nil
}

// renderLatency is the markdown table of the put latencies, each against
// the idle row (the first).
func renderLatency(rows []latencyRow) string {
	var b strings.Builder
	idle := rows[0]
	fmt.Fprintf(&b, "| while | its time (median) | puts | p50 | p99 | p99 vs idle | slowest | slowest vs idle |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, r := range rows {
		took := "-"
		if r.runs > 0 {
			took = fmt.Sprintf("%.2fs (%d runs)", r.wall.Seconds(), r.runs)
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %.1f ms | %.1f ms | %.2fx | %.1f ms | %.2fx |\n", r.name, took, len(r.puts),
			ms(r.p(0.5)), ms(r.p(0.99)), ms(r.p(0.99))/ms(idle.p(0.99)), ms(r.p(1)), ms(r.p(1))/ms(idle.p(1)))
	}
	return b.String()
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
