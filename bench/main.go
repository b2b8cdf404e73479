// Command bench loads a real etcd with a realistic Kubernetes keyspace and
// measures regghost scan against what a user would otherwise run: etcdctl
// get --keys-only, and etcdctl get -w json piped into a decoder. See
// README.md (make bench).
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

func main() {
	keys := flag.Int("keys", 1_000_000, "keys to load")
	namespaces := flag.Int("namespaces", 500, "namespaces to spread them over")
	ghosts := flag.Int("ghosts", 3000, "ghost keys among them")
	pageSize := flag.Int("page-size", 500, "regghost --page-size")
	out := flag.String("out", "", "also write the results table (markdown) to this file")
	flag.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the whole-keyspace regghost scan here")
	flag.StringVar(&only, "only", "", "run only the commands whose name contains this")
	flag.BoolVar(&offline, "offline", true, "also measure the db-file commands on a snapshot of the first server")
	flag.IntVar(&offlineRuns, "offline-runs", 3, "runs of each db-file command; its wall is their median")
	flag.IntVar(&largeKeys, "large-keys", 300_000, "keys of the large-file case (0: skip it)")
	flag.IntVar(&largePad, "large-pad", 14_000, "bytes added to each object of the large-file case")
	flag.IntVar(&findingsKeys, "findings-keys", 100_000, "keys of the all-findings case, every one a ghost (0: skip it)")
	flag.IntVar(&exporterCycles, "exporter-cycles", 20, "regghost serve cycles measured on the first server (0: skip them)")
	flag.BoolVar(&serve, "serve", false, "load the first -etcd server, print its endpoint and keep it running (for profiling by hand)")
	flag.IntVar(&membersKeys, "members-keys", 0, "keys of the members case: three etcd 3.7 members compared key by key beside etcdctl reading each (0: skip it)")
	flag.IntVar(&membersRuns, "members-runs", 3, "runs of each command of the members case; its wall is their median")
	flag.StringVar(&membersPaces, "members-paces", "", "further --max-keys-per-second of regghost members to measure beside another client's writes, comma-separated")
	flag.StringVar(&membersBaseline, "members-baseline", "", "another regghost binary (one built before a change) whose members runs are measured beside this one's, in the same run")
	flag.BoolVar(&membersLatencyOnly, "members-latency-only", false, "measure only another client's write latency in the members case, not the wall times beside etcdctl")
	flag.IntVar(&leasesEvents, "leases-events", 0, "events of the leases case: the audit and the removal beside etcdctl lease list + timetolive --keys and etcdctl del --prefix (0: skip it)")
	flag.IntVar(&leasesRate, "leases-rate", 20, "regghost leases --confirm --rate in the leases case")
	flag.IntVar(&leasesBatch, "leases-batch", 64, "regghost leases --confirm --batch-size in the leases case")
	servers := flag.String("etcd", "3.7,3.5", "etcd releases to measure side by side, each a server built from the module proxy: 3.7, 3.6, 3.5 (empty: none, the large file alone)")
	flag.Parse()
	if err := run(strings.Split(*servers, ","), *keys, *namespaces, *ghosts, *pageSize, *out); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// result is one measured command.
type result struct {
	name       string
	wall       time.Duration
	maxRSSKiB  int64
	ranges     float64
	sentBytes  float64
	probeP99   time.Duration
	probeCount int
	objects    int
}

var cpuProfile, only string

// offlineRuns is how many times each db-file command runs.
var offlineRuns int

// serve keeps the loaded etcd running instead of measuring (for profiling by hand).
var serve bool

// offline adds the db-file rows; largeKeys and largePad size the large-file
// case (0 keys: none).
var (
	offline             bool
	largeKeys, largePad int
	// findingsKeys sizes the all-findings case; exporterCycles the serve run.
	findingsKeys, exporterCycles int
)

// etcdTools names the tool module and tool of each etcd release.
var etcdTools = map[string][2]string{"3.7": {"e2e/tools/etcd", "etcd"}, "3.6": {"e2e/tools/etcd36", "etcd36"}, "3.5": {"e2e/tools/etcd35", "etcd35"}}

// run measures every server in turn, each loaded with the same keyspace,
// and writes one table per server.
func run(servers []string, keys, namespaces, ghosts, pageSize int, outFile string) error {
	// One build for every server: the binaries measured are the same.
	bin, err := os.MkdirTemp("", "regghost-bench-bin")
	if err != nil {
		return err
	}
	defer os.RemoveAll(bin)
	t := tools{regghost: filepath.Join(bin, "regghost"), jsondecode: filepath.Join(bin, "jsondecode")}
	if err := goRun(".", "build", "-o", t.regghost, "."); err != nil {
		return err
	}
	if err := goRun(".", "build", "-o", t.jsondecode, "./bench/jsondecode"); err != nil {
		return err
	}
	if t.etcdctl, err = goOut("e2e/tools/etcd", "tool", "-n", "etcdctl"); err != nil {
		return err
	}
	if t.etcdutl, err = goOut("e2e/tools/etcd", "tool", "-n", "etcdutl"); err != nil {
		return err
	}
	var tables strings.Builder
	for _, v := range servers {
		if strings.TrimSpace(v) == "" {
			continue // -etcd= measures the offline cases alone
		}
		tool, ok := etcdTools[strings.TrimSpace(v)]
		if !ok {
			return fmt.Errorf("-etcd %q: not one of 3.7, 3.6, 3.5", v)
		}
		table, err := runOn(tool, t, loadSpec{keys: keys, namespaces: namespaces, ghosts: ghosts}, pageSize)
		if err != nil {
			return fmt.Errorf("etcd %s: %w", v, err)
		}
		tables.WriteString(table)
	}
	if membersKeys > 0 {
		table, err := membersTable(context.Background(), t, membersKeys, namespaces)
		if err != nil {
			return fmt.Errorf("members: %w", err)
		}
		tables.WriteString(table)
	}
	if leasesEvents > 0 {
		table, err := leasesTable(context.Background(), t, leasesEvents)
		if err != nil {
			return fmt.Errorf("leases: %w", err)
		}
		tables.WriteString(table)
	}
	if findingsKeys > 0 {
		table, err := findingsTable(t, findingsKeys)
		if err != nil {
			return fmt.Errorf("all-findings file: %w", err)
		}
		tables.WriteString(table)
	}
	if largeKeys > 0 {
		table, err := largeTable(t, largeKeys, largePad)
		if err != nil {
			return fmt.Errorf("large file: %w", err)
		}
		tables.WriteString(table)
	}
	// The tables are printed whatever -out says: a run of several minutes
	// is never lost to a missing flag.
	fmt.Print(tables.String())
	if outFile != "" {
		return os.WriteFile(outFile, []byte(tables.String()), 0o644)
	}
	return nil
}

// tools are the binaries every measurement runs, built or found once.
type tools struct{ regghost, jsondecode, etcdctl, etcdutl string }

// loadedEtcd is an etcd server in a directory of its own, loaded with a
// keyspace.
type loadedEtcd struct {
	dir, ep, version string
	// ns is a namespace of the keyspace, for the --namespace rows.
	ns    string
	cli   *clientv3.Client
	close func()
}

// loadEtcd starts the etcd release tool names (its module and tool) in a
// new directory and loads spec into it.
func loadEtcd(ctx context.Context, tool [2]string, spec loadSpec) (*loadedEtcd, error) {
	etcdBin, err := goOut(tool[0], "tool", "-n", tool[1])
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "regghost-bench")
	if err != nil {
		return nil, err
	}
	ep, cli, stop, err := startEtcd(ctx, etcdBin, filepath.Join(dir, "data"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	e := &loadedEtcd{dir: dir, ep: ep, cli: cli, close: func() { stop(); os.RemoveAll(dir) }}
	start := time.Now()
	if e.ns, err = load(ctx, cli, spec); err != nil {
		e.close()
		return nil, fmt.Errorf("load: %w", err)
	}
	st, err := cli.Status(ctx, ep)
	if err != nil {
		e.close()
		return nil, fmt.Errorf("status: %w", err)
	}
	e.version = st.Version
	fmt.Printf("loaded %d keys (%d namespaces, %d ghosts, %d bytes of padding each) in %s; etcd %s db %d MiB\n", spec.keys, spec.namespaces, spec.ghosts,
		spec.pad, time.Since(start).Round(time.Millisecond), st.Version, st.DbSize>>20)
	return e, nil
}

func runOn(tool [2]string, t tools, spec loadSpec, pageSize int) (string, error) {
	ctx := context.Background()
	e, err := loadEtcd(ctx, tool, spec)
	if err != nil {
		return "", err
	}
	defer e.close()
	cli, ep, ns := e.cli, e.ep, e.ns
	regghost, jsondecode, etcdctl := t.regghost, t.jsondecode, t.etcdctl

	if serve {
		fmt.Printf("serving the loaded etcd at %s until interrupted\n", ep)
		select {}
	}
	idle := probeOnly(ctx, cli, 3*time.Second)
	ctlArgs := []string{"--endpoints", ep, "--command-timeout", "30m", "get", "--prefix", "/registry/"}
	scan := []string{"scan", "--no-api", "--endpoints", ep, "--page-size", strconv.Itoa(pageSize), "--command-timeout", "30m"}
	spaceArgs := []string{"space", "--no-api", "--endpoints", ep, "--page-size", strconv.Itoa(pageSize), "--command-timeout", "30m"}
	runs := []struct {
		name string
		cmds [][]string
	}{
		{"etcdctl get --prefix --keys-only", [][]string{append([]string{etcdctl}, append(ctlArgs, "--keys-only")...)}},
		{"etcdctl get --prefix -w json (dump alone)", [][]string{append([]string{etcdctl}, append(ctlArgs, "-w", "json")...)}},
		{"etcdctl get --prefix -w json | decoder", [][]string{append([]string{etcdctl}, append(ctlArgs, "-w", "json")...), {jsondecode}}},
		{"regghost scan (whole keyspace, default pace 100k keys/s)", [][]string{append([]string{regghost}, append(scan, "-o", "json")...)}},
		{"regghost scan --max-keys-per-second 0 (unpaced)", [][]string{append([]string{regghost}, append(scan, "-o", "json", "--max-keys-per-second", "0", "--cpuprofile", cpuProfile)...)}},
		{"regghost scan --stream=false (paged, as on etcd < 3.7; unpaced)", [][]string{append([]string{regghost}, append(scan, "-o", "json", "--stream=false", "--max-keys-per-second", "0")...)}},
		{"regghost scan --namespace " + ns, [][]string{append([]string{regghost}, append(scan, "-o", "json", "--namespace", ns)...)}},
		// space must read every value to size it: beside etcdctl printing them.
		{"etcdctl get --prefix --print-value-only", [][]string{append([]string{etcdctl}, append(ctlArgs, "--print-value-only")...)}},
		{"regghost space (whole keyspace, default pace 100k keys/s)", [][]string{append([]string{regghost}, append(spaceArgs, "-o", "json")...)}},
		{"regghost space --max-keys-per-second 0 (unpaced)", [][]string{append([]string{regghost}, append(spaceArgs, "-o", "json", "--max-keys-per-second", "0")...)}},
	}
	var results []result
	for _, r := range runs {
		// Before 3.7 there is no RangeStream: every scan pages, and the
		// --stream=false row would measure the unpaced one again.
		if strings.Contains(r.name, "--stream=false") && !strings.HasPrefix(e.version, "3.7") {
			continue
		}
		if only != "" && !strings.Contains(r.name, only) && !strings.HasPrefix(r.name, "etcdctl get --prefix --keys-only") && !strings.Contains(r.name, "dump alone") &&
			!(strings.Contains(only, "space") && strings.Contains(r.name, "--print-value-only")) {
			continue
		}
		res, err := measure(ctx, cli, ep, r.name, r.cmds)
		if err != nil {
			return "", fmt.Errorf("%s: %w", r.name, err)
		}
		results = append(results, res)
		fmt.Printf("  %-45s %8s  rss %5d MiB  ranges %7.0f  sent %6.0f MiB  probe p99 %s\n", res.name, res.wall.Round(time.Millisecond),
			res.maxRSSKiB>>10, res.ranges, res.sentBytes/(1<<20), res.probeP99)
	}
	table := render(e.version, spec.keys, idle, results)
	fmt.Print(table)
	if exporterCycles > 0 && tool[1] == "etcd" {
		ex, err := exporterTable(ctx, e, t, spec.keys, exporterCycles)
		if err != nil {
			return "", fmt.Errorf("serve: %w", err)
		}
		table += ex
	}
	if offline && tool[1] == "etcd" {
		off, err := offlineTable(ctx, e, t, spec.keys, "Offline, the same keyspace")
		if err != nil {
			return "", err
		}
		table += off
	}
	return table, nil
}

// offlineTable saves a snapshot of the loaded etcd (A), deletes one
// namespace's keys and saves another (B), and measures the db-file
// commands on them.
func offlineTable(ctx context.Context, e *loadedEtcd, t tools, keys int, title string) (string, error) {
	a, b := filepath.Join(e.dir, "a.db"), filepath.Join(e.dir, "b.db")
	save := func(path string) error {
		if err := exec.Command(t.etcdctl, "--endpoints", e.ep, "--command-timeout", "30m", "snapshot", "save", path).Run(); err != nil {
			return fmt.Errorf("snapshot save %s: %w", path, err)
		}
		return nil
	}
	if err := save(a); err != nil {
		return "", err
	}
	gone := "team-0003"
	prefixes := []string{"/registry/namespaces/" + gone}
	for _, m := range mix {
		prefixes = append(prefixes, "/registry/"+m.resource+"/"+gone+"/")
	}
	for _, prefix := range prefixes {
		if _, err := e.cli.Delete(ctx, prefix, clientv3.WithPrefix()); err != nil {
			return "", fmt.Errorf("delete %s: %w", prefix, err)
		}
	}
	if err := save(b); err != nil {
		return "", err
	}
	st, err := os.Stat(a)
	if err != nil {
		return "", err
	}
	fmt.Printf("%s: snapshot %d MiB\n", title, st.Size()>>20)
	rs, err := offlineRows(t.regghost, t.etcdutl, a, b, e.ns, e.ep)
	if err != nil {
		return "", err
	}
	table := renderOffline(title, st.Size(), keys, rs)
	fmt.Print(table)
	os.Remove(a)
	os.Remove(b)
	return table, nil
}

// largeTable loads a fresh etcd 3.7 with keys objects padded to make a db
// file of several GiB, and measures the db-file commands on its snapshot.
func largeTable(t tools, keys, padBytes int) (string, error) {
	ctx := context.Background()
	e, err := loadEtcd(ctx, etcdTools["3.7"], loadSpec{keys: keys, namespaces: 100, ghosts: 300, pad: padBytes})
	if err != nil {
		return "", err
	}
	defer e.close()
	return offlineTable(ctx, e, t, keys, "Offline, a large file")
}

// startEtcd starts an etcd server with an 8 GiB quota and waits for it.
func startEtcd(ctx context.Context, etcdBin, dir string) (string, *clientv3.Client, func(), error) {
	port, peer := freePort(), freePort()
	ep := fmt.Sprintf("http://127.0.0.1:%d", port)
	etcd := exec.Command(etcdBin, "--data-dir", dir, "--listen-client-urls", ep, "--advertise-client-urls", ep,
		"--listen-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", peer), "--initial-advertise-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", peer),
		"--initial-cluster", fmt.Sprintf("default=http://127.0.0.1:%d", peer), "--quota-backend-bytes", strconv.Itoa(8<<30), "--log-level", "error")
	etcd.Stderr = os.Stderr
	etcd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := etcd.Start(); err != nil {
		return "", nil, nil, err
	}
	kill := func() { _ = etcd.Process.Kill(); _ = etcd.Wait() }
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		kill()
		return "", nil, nil, err
	}
	for i := 0; ; i++ {
		c, cancel := context.WithTimeout(ctx, time.Second)
		_, err := cli.Status(c, ep)
		cancel()
		if err == nil {
			break
		}
		if i > 60 {
			cli.Close()
			kill()
			return "", nil, nil, fmt.Errorf("etcd did not start: %w", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	return ep, cli, func() { cli.Close(); kill() }, nil
}

// measure runs a pipeline of commands (stdout of each into the next, the
// last into /dev/null) while a probe client times single-key reads, and
// reads etcd's range and sent-bytes counters before and after.
func measure(ctx context.Context, cli *clientv3.Client, ep, name string, cmds [][]string) (result, error) {
	before, err := metrics(ep)
	if err != nil {
		return result{}, err
	}
	var procs []*exec.Cmd
	for _, c := range cmds {
		procs = append(procs, exec.Command(c[0], c[1:]...))
	}
	devnull, _ := os.Open(os.DevNull)
	defer devnull.Close()
	sink, _ := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	defer sink.Close()
	var lastOut io.ReadCloser
	for i, p := range procs {
		p.Stderr = os.Stderr
		if i > 0 {
			p.Stdin = lastOut
		}
		if i < len(procs)-1 {
			r, err := p.StdoutPipe()
			if err != nil {
				return result{}, err
			}
			lastOut = r
		} else {
			p.Stdout = sink
			if len(procs) == 1 || i == len(procs)-1 {
				if strings.HasSuffix(p.Path, "jsondecode") || strings.Contains(name, "regghost") {
					// The decoder and regghost print a count line on stderr.
					p.Stderr = nil
				}
			}
		}
	}
	var stderrCount strings.Builder
	if last := procs[len(procs)-1]; last.Stderr == nil {
		last.Stderr = &stderrCount
	}
	probeCtx, stopProbe := context.WithCancel(ctx)
	lat := make(chan []time.Duration, 1)
	go func() { lat <- probe(probeCtx, cli) }()
	start := time.Now()
	for _, p := range procs {
		if err := p.Start(); err != nil {
			stopProbe()
			return result{}, err
		}
	}
	res := result{name: name}
	for _, p := range procs {
		err := p.Wait()
		var exit *exec.ExitError
		if err != nil && !(strings.Contains(name, "regghost") && asExit(err, &exit) && exit.ExitCode() == 3) {
			stopProbe()
			return result{}, fmt.Errorf("%s: %w", p.Path, err)
		}
		if ru, ok := p.ProcessState.SysUsage().(*syscall.Rusage); ok && ru.Maxrss > res.maxRSSKiB {
			res.maxRSSKiB = ru.Maxrss
		}
	}
	res.wall = time.Since(start)
	stopProbe()
	l := <-lat
	res.probeP99, res.probeCount = p99(l), len(l)
	after, err := metrics(ep)
	if err != nil {
		return result{}, err
	}
	// The probe's own reads are ranges too.
	res.ranges = after["ranges"] - before["ranges"] - float64(res.probeCount)
	res.sentBytes = after["sent"] - before["sent"]
	if n, err := strconv.Atoi(strings.TrimSpace(lastLine(stderrCount.String()))); err == nil {
		res.objects = n
	}
	return res, nil
}

func asExit(err error, target **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	*target = e
	return ok
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// probe reads one small key every 2ms until ctx ends, like another client
// of etcd (the API server) would, and returns each read's latency.
func probe(ctx context.Context, cli *clientv3.Client) []time.Duration {
	var out []time.Duration
	t := time.NewTicker(2 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return out
		case <-t.C:
		}
		s := time.Now()
		c, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := cli.Get(c, "/registry/namespaces/team-0000")
		cancel()
		if err == nil {
			out = append(out, time.Since(s))
		}
	}
}

func probeOnly(ctx context.Context, cli *clientv3.Client, d time.Duration) time.Duration {
	c, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return p99(probe(c, cli))
}

func p99(l []time.Duration) time.Duration {
	if len(l) == 0 {
		return 0
	}
	sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
	return l[len(l)*99/100].Round(10 * time.Microsecond)
}

// metrics reads etcd's Range count and bytes sent to clients.
func metrics(ep string) (map[string]float64, error) {
	m := map[string]float64{}
	err := eachSample(ep+"/metrics", func(line, name string, v float64) {
		switch {
		case strings.HasPrefix(name, "grpc_server_handled_total{") && (strings.Contains(line, `grpc_method="Range"`) || strings.Contains(line, `grpc_method="RangeStream"`)):
			m["ranges"] += v
		case name == "etcd_network_client_grpc_sent_bytes_total":
			m["sent"] = v
		}
	})
	return m, err
}

// eachSample calls fn with each sample of a /metrics page: the line, its
// name with labels, and its value. Comments are skipped.
func eachSample(url string, fn func(line, name string, v float64)) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(line)
		if len(f) != 2 || strings.HasPrefix(f[0], "#") {
			continue
		}
		v, _ := strconv.ParseFloat(f[1], 64)
		fn(line, f[0], v)
	}
	return sc.Err()
}

func render(version string, keys int, idle time.Duration, rs []result) string {
	var b strings.Builder
	base := rs[0].wall.Seconds()
	dump := rs[1].wall.Seconds()
	fmt.Fprintf(&b, "\netcd %s, %d keys; probe client GET p99 when etcd is idle: %s\n\n", version, keys, idle)
	fmt.Fprintf(&b, "| command | wall | keys/s | vs keys-only | vs json dump | peak RSS | etcd range requests (unary + stream) | bytes from etcd | other client GET p99 |\n")
	fmt.Fprintf(&b, "| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, r := range rs {
		r.name = strings.ReplaceAll(r.name, "|", "\\|")
		fmt.Fprintf(&b, "| %s | %.2fs | %.0f | %.2fx | %.2fx | %d MiB | %.0f | %.0f MiB | %s |\n", r.name, r.wall.Seconds(),
			float64(keys)/r.wall.Seconds(), r.wall.Seconds()/base, r.wall.Seconds()/dump, r.maxRSSKiB>>10, r.ranges, r.sentBytes/(1<<20), r.probeP99)
	}
	return b.String()
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func goRun(dir string, args ...string) error {
	cmd := exec.Command("go", args...)
	cmd.Dir, cmd.Stderr = dir, os.Stderr
	return cmd.Run()
}

func goOut(dir string, args ...string) (string, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir, cmd.Stderr = dir, os.Stderr
	out, err := cmd.Output()
	return strings.TrimSpace(string(out)), err
}
