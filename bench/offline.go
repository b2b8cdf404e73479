package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// offlineResult is one command run on db files.
type offlineResult struct {
	name      string
	wall      time.Duration
	maxRSSKiB int64
	// anonKiB is the peak of the process's anonymous memory (RssAnon,
	// sampled every 10 ms): what it uses beyond the file's mapped pages,
	// which bbolt's mmap counts into RSS.
	anonKiB int64
}

// offlineRows measures regghost's db-file commands on file (and file2, a
// second snapshot of the same cluster after a change) beside `etcdutl
// snapshot status`, which reads every page of the file once. ep is the
// etcd the files were saved from: recover judges against the live cluster.
func offlineRows(regghost, etcdutl, file, file2, ns, ep string) ([]offlineResult, error) {
	// The walk's index goes beside the files, and with them when the
	// bench is done; the first regghost run below writes it.
	os.Setenv("REGGHOST_INDEX_CACHE", filepath.Join(filepath.Dir(file), "index-cache"))
	key := ""
	out, err := exec.Command(regghost, "ls", "--db", file, "/registry/pods/"+ns+"/").Output()
	os.RemoveAll(os.Getenv("REGGHOST_INDEX_CACHE")) // measured cold below
	if err != nil {
		return nil, fmt.Errorf("ls --db: %w", err)
	}
	if lines := strings.Fields(string(out)); len(lines) > 0 {
		key = lines[0]
	}
	runs := []struct {
		name string
		args []string
	}{
		{"etcdutl snapshot status", []string{etcdutl, "snapshot", "status", file, "-w", "json"}},
		// space reads the file cold, as a first look at a member's db would:
		// its values and every revision, at once, and its pages.
		{"regghost space --db (values, every revision, pages; cold)", []string{regghost, "space", "--db", file, "-o", "json"}},
		{"regghost space --db B (B: after one namespace is deleted; cold)", []string{regghost, "space", "--db", file2, "-o", "json"}},
		{"regghost scan --db (whole file)", []string{regghost, "scan", "--db", file, "-o", "json"}},
		{"regghost scan --db -n " + ns, []string{regghost, "scan", "--db", file, "-n", ns, "-o", "json"}},
		{"regghost get --db KEY", []string{regghost, "get", "--db", file, key, "-o", "json"}},
		{"regghost history --db KEY (every revision of one object)", []string{regghost, "history", "--db", file, key, "-o", "json"}},
		{"regghost history --db -n " + ns + " (a namespace's revisions)", []string{regghost, "history", "--db", file, "-n", ns, "-o", "json"}},
		{"regghost ls --db /registry/pods/" + ns + "/", []string{regghost, "ls", "--db", file, "/registry/pods/" + ns + "/"}},
		{"regghost recover --snapshot FILE KEY -o yaml (one object)", []string{regghost, "recover", "--snapshot", file, key, "-o", "yaml", "--endpoints", ep, "--no-api"}},
		{"regghost diff A B (B: A after one namespace is deleted)", []string{regghost, "diff", file, file2, "-o", "json"}},
		{"regghost diff A A", []string{regghost, "diff", file, file, "-o", "json"}},
	}
	var rs []offlineResult
	for _, r := range runs {
		if only != "" && !strings.Contains(r.name, only) && !strings.HasPrefix(r.name, "etcdutl") {
			continue
		}
		// Each command runs offlineRuns times (a cold one from no index each
		// time). One run of a few seconds on a shared VM varies by a third.
		var before func()
		if strings.HasSuffix(r.name, "; cold)") {
			before = func() { os.RemoveAll(os.Getenv("REGGHOST_INDEX_CACHE")) }
		}
		res, err := measureRuns(r.name, r.args, offlineRuns, before)
		if err != nil {
			return nil, err
		}
		rs = append(rs, res)
		fmt.Printf("  %-55s %8s  rss %5d MiB  anon %5d MiB\n", res.name, res.wall.Round(time.Millisecond), res.maxRSSKiB>>10, res.anonKiB>>10)
	}
	return rs, nil
}

// measureOffline runs one command, its output discarded, sampling its
// anonymous memory while it runs.
func measureOffline(name string, args []string) (offlineResult, error) {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stderr = nil
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return offlineResult{}, err
	}
	done := make(chan struct{})
	peak := make(chan int64, 1)
	go func() {
		var max int64
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			if kib := rssAnon(cmd.Process.Pid); kib > max {
				max = kib
			}
			select {
			case <-done:
				peak <- max
				return
			case <-t.C:
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	res := offlineResult{name: name, wall: time.Since(start), anonKiB: <-peak}
	var exit *exec.ExitError
	if err != nil && !(asExit(err, &exit) && exit.ExitCode() == 3) {
		return res, fmt.Errorf("%s: %w", name, err)
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		res.maxRSSKiB = ru.Maxrss
	}
	return res, nil
}

// measureRuns runs a command runs times (at least once), before each run
// calling before when set: the wall is the median, the memory the peak.
func measureRuns(name string, args []string, runs int, before func()) (offlineResult, error) {
	var walls []time.Duration
	var res offlineResult
	for range max(runs, 1) {
		if before != nil {
			before()
		}
		one, err := measureOffline(name, args)
		if err != nil {
			return res, err
		}
		walls = append(walls, one.wall)
		res.name, res.maxRSSKiB, res.anonKiB = one.name, max(res.maxRSSKiB, one.maxRSSKiB), max(res.anonKiB, one.anonKiB)
	}
	slices.Sort(walls)
	res.wall = walls[len(walls)/2]
	return res, nil
}

// rssAnon reads RssAnon (KiB) from /proc/PID/status; 0 once the process is gone.
func rssAnon(pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "RssAnon:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// renderOffline is the markdown table of an offline run.
func renderOffline(title string, size int64, keys int, rs []offlineResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n%s: a %d MiB snapshot of %d keys\n\n", title, size>>20, keys)
	fmt.Fprintf(&b, "| command | wall | vs etcdutl snapshot status | peak RSS | peak memory beyond the mapped file (RssAnon) |\n| --- | --- | --- | --- | --- |\n")
	base := rs[0].wall.Seconds()
	for _, r := range rs {
		fmt.Fprintf(&b, "| %s | %.3fs | %.2fx | %d MiB | %d MiB |\n", r.name, r.wall.Seconds(), r.wall.Seconds()/base, r.maxRSSKiB>>10, r.anonKiB>>10)
	}
	return b.String()
}

// findingsTable loads a fresh etcd 3.7 with keys objects every one of which
// is a finding (a third in a namespace that is gone, a third of a CRD that is
// gone, a third corrupt), and measures scan --db on its snapshot: a report
// with that many findings must stay bounded in memory.
func findingsTable(t tools, keys int) (string, error) {
	ctx := context.Background()
	// Two namespaces of no objects but their keys, and the two every cluster has.
	e, err := loadEtcd(ctx, etcdTools["3.7"], loadSpec{keys: keys + 4, namespaces: 2, ghosts: keys})
	if err != nil {
		return "", err
	}
	defer e.close()
	file := filepath.Join(e.dir, "findings.db")
	if err := exec.Command(t.etcdctl, "--endpoints", e.ep, "--command-timeout", "30m", "snapshot", "save", file).Run(); err != nil {
		return "", fmt.Errorf("snapshot save %s: %w", file, err)
	}
	defer os.Remove(file)
	st, err := os.Stat(file)
	if err != nil {
		return "", err
	}
	var rs []offlineResult
	runs := []struct {
		name string
		args []string
	}{
		{"etcdutl snapshot status", []string{t.etcdutl, "snapshot", "status", file, "-w", "json"}},
		{"regghost scan --db -o json (every key a finding)", []string{t.regghost, "scan", "--db", file, "-o", "json"}},
		{"regghost scan --db (table)", []string{t.regghost, "scan", "--db", file}},
	}
	// BENCH_BASELINE names another regghost binary (an earlier commit's)
	// measured on the same file, for a before and after.
	if base := os.Getenv("BENCH_BASELINE"); base != "" {
		runs = append(runs, struct {
			name string
			args []string
		}{"baseline " + filepath.Base(base) + ": scan --db -o json", []string{base, "scan", "--db", file, "-o", "json"}},
			struct {
				name string
				args []string
			}{"baseline " + filepath.Base(base) + ": scan --db (table)", []string{base, "scan", "--db", file}})
	}
	for _, r := range runs {
		res, err := measureOffline(r.name, r.args)
		if err != nil {
			return "", err
		}
		rs = append(rs, res)
		fmt.Printf("  %-55s %8s  rss %5d MiB  anon %5d MiB\n", res.name, res.wall.Round(time.Millisecond), res.maxRSSKiB>>10, res.anonKiB>>10)
	}
	table := renderOffline("Offline, every key a finding", st.Size(), keys, rs)
	fmt.Print(table)
	return table, nil
}
