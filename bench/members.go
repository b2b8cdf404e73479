package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// membersKeys sizes the members case (0: skip it): three etcd 3.7 members
// loaded with that many keys, and regghost members comparing them key by
// key beside etcdctl reading every member's values in turn.
var membersKeys, membersRuns int

// membersPaces are further --max-keys-per-second of regghost members whose
// cost to another client's writes is measured ("" none).
var membersPaces string

// membersBaseline is another regghost binary (one built before a change,
// say) whose members runs are measured beside this one's, in the same run
// ("" none); membersLatencyOnly leaves out the wall table (etcdctl beside
// an unpaced comparison) and measures the writer's latency alone.
var (
	membersBaseline    string
	membersLatencyOnly bool
)

// membersGoal is how far above idle the writer's p99 may be while regghost
// members reads (issue 51): the rows say whether they kept it.
const membersGoal = 1.5

// membersTable starts a 3-member etcd 3.7 cluster, loads it, and measures
// `regghost members --compare-keys always` (every member's keyspace read
// and compared, values hashed) against `etcdctl get --prefix
// --print-value-only --consistency=s` run against each member in turn: what
// an operator runs by hand to compare members, without the comparison.
// Each is run membersRuns times; the wall is the median, the memory the
// peak (not with -members-latency-only). Then another client's writes are
// timed beside regghost members (latencyRows), and the rows that kept
// their p99 within membersGoal of idle's are named.
func membersTable(ctx context.Context, t tools, keys, namespaces int) (string, error) {
	etcdBin, err := goOut("e2e/tools/etcd", "tool", "-n", "etcd")
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "regghost-bench-members")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	var eps, initial []string
	var peers []string
	for i := range 3 {
		eps = append(eps, fmt.Sprintf("http://127.0.0.1:%d", freePort()))
		peers = append(peers, fmt.Sprintf("http://127.0.0.1:%d", freePort()))
		initial = append(initial, fmt.Sprintf("m%d=%s", i, peers[i]))
	}
	for i := range 3 {
		cmd := exec.Command(etcdBin, "--name", fmt.Sprintf("m%d", i), "--data-dir", filepath.Join(dir, fmt.Sprintf("m%d", i)),
			"--listen-client-urls", eps[i], "--advertise-client-urls", eps[i], "--listen-peer-urls", peers[i], "--initial-advertise-peer-urls", peers[i],
			"--initial-cluster", strings.Join(initial, ","), "--quota-backend-bytes", fmt.Sprint(8<<30), "--log-level", "error")
		cmd.Stderr = os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			return "", err
		}
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return "", err
	}
	defer cli.Close()
	for i := 0; ; i++ {
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := cli.Put(c, "/bench-ready", "1")
		cancel()
		if err == nil {
			break
		}
		if i > 60 {
			return "", fmt.Errorf("the members did not elect a leader: %w", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	fmt.Fprintf(os.Stderr, "bench: loading %d keys into 3 etcd 3.7 members\n", keys)
	if _, err := load(ctx, cli, loadSpec{keys: keys, namespaces: namespaces}); err != nil {
		return "", err
	}
	st, err := cli.Status(ctx, eps[0])
	if err != nil {
		return "", err
	}
	var reads []string
	for _, ep := range eps {
		reads = append(reads, fmt.Sprintf("%s get --endpoints %s --prefix '' --print-value-only --consistency=s --command-timeout 10m >/dev/null", t.etcdctl, ep))
	}
	cases := []struct {
		name string
		args []string
	}{
		{"etcdctl get --prefix --print-value-only --consistency=s, each member in turn", []string{"sh", "-c", strings.Join(reads, " && ")}},
		{"regghost members --compare-keys always --max-keys-per-second 0", []string{t.regghost, "members", "--compare-keys", "always", "--max-keys-per-second", "0",
			"--endpoints", strings.Join(eps, ","), "--no-api", "--command-timeout", "30m", "-o", "json"}},
	}
	// kube-apiserver compacts every 5 minutes: each member keeps the
	// hash of its last compaction, which regghost members reads first.
	if _, err := cli.Compact(ctx, st.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		return "", fmt.Errorf("compact: %w", err)
	}
	lat, err := latencyRows(ctx, cli, t, eps)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nmembers: 3 etcd 3.7 members, %d keys, each db %d MiB\n", keys, st.DbSize>>20)
	if !membersLatencyOnly {
		var rs []offlineResult
		for _, c := range cases {
			r, err := measureRuns(c.name, c.args, membersRuns, nil)
			if err != nil {
				return "", err
			}
			rs = append(rs, r)
		}
		fmt.Fprintf(&b, "\nMedians of %d runs:\n\n", max(membersRuns, 1))
		fmt.Fprintf(&b, "| command | wall | vs etcdctl | peak RSS | peak RssAnon |\n| --- | --- | --- | --- | --- |\n")
		for _, r := range rs {
			fmt.Fprintf(&b, "| %s | %.2fs | %.2fx | %d MiB | %d MiB |\n", r.name, r.wall.Seconds(), r.wall.Seconds()/rs[0].wall.Seconds(), r.maxRSSKiB>>10, r.anonKiB>>10)
		}
	}
	fmt.Fprintf(&b, "\nAnother client's put latency (one small put every 20 ms, through every member in turn), idle and while each "+
		"comparison runs back to back for at least %s, in the same run:\n\n%s", latencyWindow, renderLatency(lat))
	fmt.Fprintf(&b, "\n%s\n", goalSaid(lat))
	return b.String(), nil
}

// goalSaid says which regghost members rows kept the writer's p99 within
// membersGoal of idle's.
func goalSaid(rows []latencyRow) string {
	var kept, missed []string
	for _, r := range rows[1:] {
		if !strings.Contains(r.name, "regghost members") || strings.Contains(r.name, "--hash full") {
			continue // a full hash holds each member's commits by design
		}
		if ratio := ms(r.p(0.99)) / ms(rows[0].p(0.99)); ratio <= membersGoal {
			kept = append(kept, fmt.Sprintf("%s (%.2fx)", r.name, ratio))
		} else {
			missed = append(missed, fmt.Sprintf("%s (%.2fx)", r.name, ratio))
		}
	}
	return fmt.Sprintf("Writer's p99 within %.1fx of idle: kept by %s; missed by %s.", membersGoal, orNone(kept), orNone(missed))
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// latencyWindow is how long each put latency row is measured.
const latencyWindow = 30 * time.Second

// latencyRows measures another client's puts idle; during `regghost
// members` then `regghost members --compare-keys always`, in turn (as an
// operator runs them, the second reading every member's keyspace, paced
// by each member's latency); during serve's comparison (the same options
// serve passes: hashes kept from the compaction, keys only when they do
// not agree) and during a full hash on demand; then at each of
// membersPaces, and the same runs of membersBaseline.
func latencyRows(ctx context.Context, cli *clientv3.Client, t tools, eps []string) ([]latencyRow, error) {
	base := func(bin string, extra ...string) []string {
		return append([]string{bin, "members", "--endpoints", strings.Join(eps, ","), "--no-api", "--command-timeout", "30m", "-o", "json"}, extra...)
	}
	type row struct {
		name string
		cmds [][]string
	}
	asRun := func(bin string) [][]string { return [][]string{base(bin), base(bin, "--compare-keys", "always")} }
	cases := []row{
		{"idle", nil},
		{"regghost members, then regghost members --compare-keys always", asRun(t.regghost)},
		{"serve's comparison (regghost members --compare-keys mismatch)", [][]string{base(t.regghost, "--compare-keys", "mismatch")}},
		{"regghost members --hash full --compare-keys never", [][]string{base(t.regghost, "--hash", "full", "--compare-keys", "never")}},
	}
	for _, pace := range strings.Split(membersPaces, ",") {
		if pace = strings.TrimSpace(pace); pace != "" {
			cases = append(cases, row{"regghost members --max-keys-per-second " + pace, [][]string{base(t.regghost, "--max-keys-per-second", pace)}})
		}
	}
	if membersBaseline != "" {
		cases = append(cases, row{fmt.Sprintf("regghost members, then --compare-keys always, of %s", filepath.Base(membersBaseline)), asRun(membersBaseline)})
	}
	var rows []latencyRow
	for _, c := range cases {
		fmt.Fprintf(os.Stderr, "bench: put latency, %s\n", c.name)
		r, err := putLatency(ctx, cli, c.name, c.cmds, latencyWindow)
		if err != nil {
			return nil, err
		}
		rows = append(rows, r)
	}
	return rows, nil
}
