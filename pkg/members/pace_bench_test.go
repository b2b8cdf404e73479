package members

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/pace"
)

var (
	benchPaceKeys   = flag.Int("pace.keys", 5000, "keys of BenchmarkReadBesideWriter (about 1 KiB each)")
	benchPaceWindow = flag.Duration("pace.window", 10*time.Second, "how long BenchmarkReadBesideWriter measures the writer, idle and beside the reads")
	benchPaceModes  = flag.String("pace.modes", "unpaced,fixed-25000,adaptive-25000,adaptive-100000",
		"the reads BenchmarkReadBesideWriter measures: unpaced, fixed-N (the pace before pkg/pace), adaptive-N (pkg/pace up to N)")
	benchPaceFloor = flag.Duration("pace.floor", 0, "pkg/pace's Floor in BenchmarkReadBesideWriter (0: its default)")
)

// BenchmarkReadBesideWriter is a small, in-process version of bench's
// members case (bench/members.go): three embedded members loaded with
// -pace.keys keys; another client puts one small key every 20 ms through
// them in turn; its puts are timed idle and while every member's keyspace
// is read at once (serializably, each on its own client, merged key by
// key, as compareKeys reads them), back to back, for -pace.window each.
// It reports the writer's p99 against its idle p99 of the same run. The
// members share this process and its cores, so the numbers are indicative
// only; bench/members.go measures real etcd processes.
//
//	go test ./pkg/members -run '^$' -bench ReadBesideWriter -benchtime 1x -pace.keys 5000
func BenchmarkReadBesideWriter(b *testing.B) {
	ec := etcdtest.StartCluster(b, 3, 2000)
	ctx := context.Background()
	value := strings.Repeat("x", 1024)
	for i := 0; i < *benchPaceKeys; i += 100 {
		var ops []clientv3.Op
		for j := i; j < min(i+100, *benchPaceKeys); j++ {
			ops = append(ops, clientv3.OpPut(fmt.Sprintf("/registry/configmaps/ns-%d/cm-%06d", j%50, j), value))
		}
		if _, err := ec.Client.Txn(ctx).Then(ops...).Commit(); err != nil {
			b.Fatal(err)
		}
	}
	o := Options{Config: clientv3.Config{Endpoints: ec.Endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()}}
	var conns []conn
	for i, ep := range ec.Endpoints {
		cli, err := o.dial(ep)
		if err != nil {
			b.Fatal(err)
		}
		defer cli.Close()
		conns = append(conns, conn{m: i, ep: ep, cli: cli})
	}
	for _, mode := range strings.Split(*benchPaceModes, ",") {
		kind, n := mode, 0
		if k, v, ok := strings.Cut(mode, "-"); ok {
			kind = k
			if _, err := fmt.Sscan(v, &n); err != nil {
				b.Fatalf("-pace.modes %q: %v", mode, err)
			}
		}
		b.Run(mode, func(b *testing.B) {
			for b.Loop() {
				idle := putsBeside(ctx, b, ec.Client, nil, *benchPaceWindow)
				var reads int64
				var keys float64
				var lowest float64
				var backoffs int
				var idleProbe, worstProbe time.Duration
				busy := putsBeside(ctx, b, ec.Client, func(ctx context.Context) error {
					st, read, err := readMembers(ctx, conns, kind, n)
					keys += read
					for _, s := range st {
						if lowest == 0 || s.Lowest < lowest {
							lowest = s.Lowest
						}
						backoffs += s.BackedOff
						idleProbe, worstProbe = max(idleProbe, s.Idle), max(worstProbe, s.Worst)
					}
					if err == nil {
						reads++
					}
					return err
				}, *benchPaceWindow)
				b.ReportMetric(ms(p(idle, 0.99)), "idle-p99-ms")
				b.ReportMetric(ms(p(busy, 0.99)), "p99-ms")
				b.ReportMetric(ms(p(busy, 0.99))/ms(p(idle, 0.99)), "p99/idle")
				b.ReportMetric(ms(p(busy, 1))/ms(p(idle, 1)), "max/idle")
				b.ReportMetric(float64(reads), "reads")
				b.ReportMetric(keys/benchPaceWindow.Seconds(), "keys/s/member")
				if kind == "adaptive" {
					b.ReportMetric(lowest, "lowest-pace")
					b.ReportMetric(float64(backoffs), "backoffs")
					b.ReportMetric(ms(idleProbe), "idle-probe-ms")
					b.ReportMetric(ms(worstProbe), "worst-probe-ms")
				}
			}
		})
	}
}

// readMembers reads every member's keyspace at once and merges them, as
// compareKeys does: unpaced, at a fixed pace of n keys a second, or paced
// by pkg/pace up to n. It returns the pacers' stats and how many keys
// each member's read handed over, on average (all of them unless ctx
// ended first).
func readMembers(ctx context.Context, conns []conn, kind string, n int) ([]pace.Stats, float64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var pacers []*pace.Pacer
	curs := make([]*cursor, len(conns))
	for i, c := range conns {
		st, err := etcdscan.NewEtcdStore(ctx, c.cli, etcdscan.DefaultPageSize)
		if err != nil {
			return nil, 0, err
		}
		var p *pace.Pacer
		switch kind {
		case "fixed":
			st.SetMaxKeysPerSecond(n)
		case "adaptive":
			if p, err = pace.New(c.probe, pace.Config{Max: float64(n), Floor: *benchPaceFloor}); err != nil {
				return nil, 0, err
			}
			st.SetPacer(p)
			pacers = append(pacers, p)
		}
		curs[i] = read(ctx, fmt.Sprintf("m%d", i), st, p, &wg)
	}
	_, err := merge(curs, ModeRevision, func(string, []*record) error { return nil })
	cancel()
	wg.Wait()
	var stats []pace.Stats
	for _, p := range pacers {
		stats = append(stats, p.Stats())
	}
	var keys int64
	for _, c := range curs {
		keys += c.keys
	}
	return stats, float64(keys) / float64(len(curs)), err
}

// putsBeside times one small put every 20 ms through cli for d, while
// work runs back to back (nil: idle).
func putsBeside(ctx context.Context, b *testing.B, cli *clientv3.Client, work func(context.Context) error, d time.Duration) []time.Duration {
	// A cancel, not a deadline: a rate.Limiter refuses a wait that
	// would outlast a deadline.
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	time.AfterFunc(d, stop)
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
	for work != nil && ctx.Err() == nil {
		if err := work(ctx); err != nil && ctx.Err() == nil {
			b.Fatal(err)
		}
	}
	<-ctx.Done()
	return <-done
}

// p is the q quantile of ds.
func p(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
