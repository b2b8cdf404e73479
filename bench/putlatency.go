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
	// runs is how many times each command ran, walls their median times
	// (one per command, in turn).
	runs  int
	walls []time.Duration
	// paced are the lines of the last runs' output that say how each
	// member's read was paced (regghost members' progress).
	paced []string
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
// cmds run in turn, back to back (none: idle), each at least once, and
// measures each put. It is what the API server's writes (leases, leader
// election) meet beside the commands.
func putLatency(ctx context.Context, cli *clientv3.Client, name string, cmds [][]string, d time.Duration) (latencyRow, error) {
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
	walls := make([][]time.Duration, len(cmds))
	deadline := time.Now().Add(d)
	if len(cmds) == 0 {
		time.Sleep(d)
	}
	for len(cmds) > 0 && (row.runs == 0 || time.Now().Before(deadline)) {
		row.paced = row.paced[:0]
		for i, args := range cmds {
			start := time.Now()
			cmd := exec.Command(args[0], args[1:]...)
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				return row, fmt.Errorf("%s: %v\n%s", strings.Join(args, " "), err, stderr.String())
			}
			walls[i] = append(walls[i], time.Since(start))
			row.paced = append(row.paced, pacedLines(stderr.String())...)
		}
		row.runs++
	}
	stop()
	row.puts = <-done
	for _, w := range walls {
		slices.Sort(w)
		row.walls = append(row.walls, w[len(w)/2])
	}
	return row, nil
}

// pacedLines are the progress paragraphs of regghost members that say how
// a member's read was paced ("m0: 100000 keys read in 6.3s; its probe
// answered in ..."), each joined back into one line.
func pacedLines(stderr string) []string {
	var paras []string
	for _, line := range strings.Split(stderr, "\n") {
		switch {
		case strings.HasPrefix(line, "regghost: "):
			paras = append(paras, strings.TrimPrefix(line, "regghost: "))
		case strings.HasPrefix(line, "  ") && len(paras) > 0:
			paras[len(paras)-1] += " " + strings.TrimSpace(line)
		}
	}
	return slices.DeleteFunc(paras, func(p string) bool { return !strings.Contains(p, "its probe answered in") })
}

// renderLatency is the markdown table of the put latencies, each against
// the idle row (the first), and below it how each member's read was paced
// in the last run of each row that says so.
func renderLatency(rows []latencyRow) string {
	var b strings.Builder
	idle := rows[0]
	fmt.Fprintf(&b, "| while | its time (median) | puts | p50 | p99 | p99 vs idle | slowest | slowest vs idle |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, r := range rows {
		took := "-"
		if r.runs > 0 {
			var ws []string
			for _, w := range r.walls {
				ws = append(ws, fmt.Sprintf("%.2fs", w.Seconds()))
			}
			took = fmt.Sprintf("%s (%d runs)", strings.Join(ws, " and "), r.runs)
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %.1f ms | %.1f ms | %.2fx | %.1f ms | %.2fx |\n", r.name, took, len(r.puts),
			ms(r.p(0.5)), ms(r.p(0.99)), ms(r.p(0.99))/ms(idle.p(0.99)), ms(r.p(1)), ms(r.p(1))/ms(idle.p(1)))
	}
	for _, r := range rows {
		if len(r.paced) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\nHow each member's read was paced, %s (its last run):\n\n", r.name)
		for _, l := range r.paced {
			fmt.Fprintf(&b, "- %s\n", l)
		}
	}
	return b.String()
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
