package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/regghost/regghost/pkg/members"
)

// throttle holds process pid to a hundredth of a CPU in a cgroup of its
// own (cgroup v1's cpu controller, else cgroup v2's cpu.max), the way a
// starved or slow node does: the member answers its Status, slowly, and
// applies far less than the others. release puts it back. The test is
// skipped where no cgroup can be made.
func throttle(t *testing.T, pid int) (release func()) {
	t.Helper()
	name := fmt.Sprintf("regghost-e2e-%d", pid)
	type layout struct{ dir, parent string }
	for _, l := range []layout{{"/sys/fs/cgroup/cpu/" + name, "/sys/fs/cgroup/cpu"}, {"/sys/fs/cgroup/" + name, "/sys/fs/cgroup"}} {
		if err := os.Mkdir(l.dir, 0o755); err != nil {
			continue
		}
		write := func(file, value string) error { return os.WriteFile(filepath.Join(l.dir, file), []byte(value), 0o644) }
		err := errors.Join(write("cpu.cfs_period_us", "100000"), write("cpu.cfs_quota_us", "1000"))
		if err != nil {
			err = write("cpu.max", "1000 100000")
		}
		if err == nil {
			err = write("cgroup.procs", strconv.Itoa(pid))
		}
		if err != nil {
			_ = os.Remove(l.dir)
			continue
		}
		done := false
		release = func() {
			if done {
				return
			}
			done = true
			_ = os.WriteFile(filepath.Join(l.parent, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644)
			_ = os.Remove(l.dir)
		}
		t.Cleanup(release)
		return release
	}
	t.Skip("no cgroup can be made here to slow an etcd member down (neither /sys/fs/cgroup/cpu nor cgroup v2's cpu.max is writable)")
	return nil
}

// behindIsNotWrong: a follower made to lag (held to 1% of a CPU
// while writes go on, then released) is "behind", with how far, and
// never "wrong": `members` leaves it out (exit 1, not 3), serve exports
// it as behind and not wrong, a real Prometheus fires the warning and
// never RegghostEtcdMembersDisagree; released, it catches up and the
// members agree.
func behindIsNotWrong(t *testing.T, c *cluster, compare func(*testing.T) (*members.Report, int)) {
	f := c.members[0]
	if c.leader(t) == f {
		f = c.members[1]
	}
	dir := t.TempDir()
	srv := c.startServe(t, dir, "--interval", "1h", "--members-interval", "2s")
	p := scrapeWithRules(t, dir, srv)
	release := throttle(t, f.proc.cmd.Process.Pid)

	// Writes go on meanwhile through the other members, as
	// kube-apiserver's do, from many clients at once (300 puts a second):
	// the member held to 1% of a CPU falls further behind.
	var others []string
	for _, m := range c.members {
		if m != f {
			others = append(others, m.url)
		}
	}
	cli := c.etcdClient(t, others...)
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	errs := make(chan error, 60)
	for g := range 60 {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				_, err := cli.Put(pctx, fmt.Sprintf("/e2e-writer/%d/%d", g, i%20), strconv.Itoa(i))
				cancel()
				if err != nil && ctx.Err() == nil {
					errs <- err
					return
				}
				select {
				case <-ctx.Done():
				case <-time.After(200 * time.Millisecond):
				}
			}
		})
	}
	defer func() {
		stop()
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("the writers beside the lagging member: %v", err)
		}
	}()

	series := `regghost_etcd_member_behind_entries{member="` + f.name + `"}`
	waitFor(t, 2*time.Minute, "serve to export "+f.name+" behind", func() error {
		if v, ok := srv.metric(t, series); !ok || v == 0 {
			return fmt.Errorf("%s = %v (present %v)", series, v, ok)
		}
		return nil
	})
	// Each run of members judges the member on what it applies meanwhile:
	// it may catch up for a moment, or, held to 1% of a CPU on a loaded
	// machine, answer no Status in time and be left out as not answering.
	// Never is it named wrong, and every run leaves it out (exit 1).
	var rep *members.Report
	var m int
	var last string
	silentOnly := true
	for deadline := time.Now().Add(2 * time.Minute); rep == nil && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		r, code := compare(t)
		out, _ := json.Marshal(r.Verdict)
		if code == 3 || len(r.Verdict.Wrong) > 0 {
			t.Fatalf("members with %s lagging: exit %d, verdict %s", f.name, code, out)
		}
		last = fmt.Sprintf("exit %d, verdict %s", code, out)
		i := slices.IndexFunc(r.Members, func(m members.Member) bool { return m.Name == f.name })
		switch {
		case code == 1 && slices.Equal(r.Verdict.Behind, []string{f.name}) && i >= 0 && r.Members[i].Behind != nil:
			rep, m = r, i
		case code != 1 || !slices.Equal(r.Verdict.NotCompared, []string{f.name}):
			silentOnly = false
		}
	}
	switch {
	case rep != nil:
		t.Logf("%s is behind by %d raft entries and %d revisions", f.name, rep.Members[m].Behind.Entries, rep.Members[m].Behind.Revisions)
	case silentOnly:
		// serve named it behind above; each run of members found it
		// silent twice in a row, and said so rather than guess.
		t.Logf("%s answered no run of members in time: each left it out as not answering (exit 1), never wrong; last: %s", f.name, last)
	default:
		t.Fatalf("timed out waiting for members to name %s behind: %s", f.name, last)
	}
	waitFor(t, time.Minute, "RegghostEtcdMemberBehind naming "+f.name, func() error {
		return firing(p, "RegghostEtcdMemberBehind", "member", f.name)
	})

	release()
	stop()
	wg.Wait()
	waitFor(t, 2*time.Minute, f.name+" to catch up and the members to agree", func() error {
		if rep, code := compare(t); code != 0 || !rep.Verdict.Agree {
			return fmt.Errorf("exit %d, verdict %+v", code, rep.Verdict)
		}
		return nil
	})
	// Over the whole time: never named wrong, never the critical alert.
	if got, err := p.query(`max_over_time(regghost_etcd_member_wrong[10m]) > 0`); err != nil || len(got) != 0 {
		log, _ := os.ReadFile(filepath.Join(dir, "serve.log"))
		t.Errorf("a member was exported wrong while %s lagged: %v, %v; serve's log:\n%s", f.name, got, err, log)
	}
	if got, err := p.query(`count_over_time(ALERTS{alertname="RegghostEtcdMembersDisagree"}[10m])`); err != nil || len(got) != 0 {
		t.Errorf("RegghostEtcdMembersDisagree while %s lagged: %v, %v", f.name, got, err)
	}
}
