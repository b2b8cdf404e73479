package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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

// membersTable starts a 3-member etcd 3.7 cluster, loads it, and measures
// `regghost members --compare-keys always` (every member's keyspace read
// and compared, values hashed) against `etcdctl get --prefix
// --print-value-only --consistency=s` run against each member in turn: what
// an operator runs by hand to compare members, without the comparison.
// Each is run membersRuns times; the wall is the median, the memory the
// peak.
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
	var rs []offlineResult
	for _, c := range cases {
		r, err := measureRuns(c.name, c.args, membersRuns, nil)
		if err != nil {
			return "", err
		}
		rs = append(rs, r)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nmembers: 3 etcd 3.7 members, %d keys, each db %d MiB; medians of %d runs\n\n", keys, st.DbSize>>20, max(membersRuns, 1))
	fmt.Fprintf(&b, "| command | wall | vs etcdctl | peak RSS | peak RssAnon |\n| --- | --- | --- | --- | --- |\n")
	for _, r := range rs {
		fmt.Fprintf(&b, "| %s | %.2fs | %.2fx | %d MiB | %d MiB |\n", r.name, r.wall.Seconds(), r.wall.Seconds()/rs[0].wall.Seconds(), r.maxRSSKiB>>10, r.anonKiB>>10)
	}
	fmt.Fprintf(&b, "\nAnother client's put latency (one small put every 20 ms, through every member in turn), idle and while each "+
		"comparison runs back to back for at least %s, in the same run:\n\n%s", latencyWindow, renderLatency(lat))
	return b.String(), nil
}

// latencyWindow is how long each put latency row is measured.
const latencyWindow = 30 * time.Second

// latencyRows measures another client's puts idle, during `regghost
// members` (as an operator runs it), during serve's comparison (the same
// options serve passes: hashes kept from the compaction, keys only when
// they do not agree) and during a full hash on demand.
func latencyRows(ctx context.Context, cli *clientv3.Client, t tools, eps []string) ([]latencyRow, error) {
	base := []string{t.regghost, "members", "--endpoints", strings.Join(eps, ","), "--no-api", "--command-timeout", "30m", "-o", "json"}
	cases := []struct {
		name  string
		extra []string
	}{
		{"idle", nil},
		{"regghost members", []string{}},
		{"serve's comparison (regghost members --compare-keys mismatch)", []string{"--compare-keys", "mismatch"}},
		{"regghost members --hash full --compare-keys never", []string{"--hash", "full", "--compare-keys", "never"}},
	}
	for _, pace := range strings.Split(membersPaces, ",") {
		if pace = strings.TrimSpace(pace); pace != "" {
			cases = append(cases, struct {
				name  string
				extra []string
			}{"regghost members --max-keys-per-second " + pace, []string{"--max-keys-per-second", pace}})
		}
	}
	var rows []latencyRow
	for _, c := range cases {
		var args []string
		if c.extra != nil {
			args = append(slices.Clone(base), c.extra...)
		}
		fmt.Fprintf(os.Stderr, "bench: put latency, %s\n", c.name)
		row, err := putLatency(ctx, cli, c.name, args, latencyWindow)
		if err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	return rows, nil
}
