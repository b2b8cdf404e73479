package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/regghost/regghost/pkg/backup"
)

// member is one etcd member of a multi-member cluster.
type member struct {
	name, url string
	args      []string
	proc      *process
}

// startMembers starts an n-member etcd cluster (TLS for clients, plain
// peers) and points the cluster's client and URL at every member.
func (c *cluster) startMembers(t *testing.T, n int) {
	t.Helper()
	var initial []string
	for i := 0; i < n; i++ {
		m := &member{name: fmt.Sprintf("m%d", i), url: fmt.Sprintf("https://127.0.0.1:%d", freePort(t))}
		peer := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
		m.args = []string{"--name", m.name, "--data-dir", filepath.Join(c.dir, m.name+"-data"),
			"--listen-client-urls", m.url, "--advertise-client-urls", m.url,
			"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
			"--cert-file", c.pki.ServerCert, "--key-file", c.pki.ServerKey,
			"--trusted-ca-file", c.pki.CA, "--client-cert-auth", "--log-level", "warn"}
		initial = append(initial, m.name+"="+peer)
		c.members = append(c.members, m)
	}
	var urls []string
	for _, m := range c.members {
		m.args = append(m.args, "--initial-cluster", strings.Join(initial, ","))
		m.proc = startProcess(t, m.name, filepath.Join(c.dir, m.name+".log"), c.etcdBin, m.args...)
		urls = append(urls, m.url)
	}
	c.etcdURL = strings.Join(urls, ",")
	cli := c.etcdClient(t, urls...)
	c.etcd = cli
	waitFor(t, 60*time.Second, "the etcd cluster to elect a leader", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := cli.Put(ctx, "/e2e-ready", "1")
		return err
	})
}

// stop kills a member.
func (m *member) stop(t *testing.T) {
	t.Helper()
	_ = syscall.Kill(-m.proc.cmd.Process.Pid, syscall.SIGKILL)
	<-m.proc.done
}

// shutdown stops a member as its supervisor would (SIGTERM): etcd commits
// its backend before it exits, so its db file holds every write it applied
// (a SIGKILL leaves the last batch in the WAL alone, replayed at the next
// start).
func (m *member) shutdown(t *testing.T) {
	t.Helper()
	_ = syscall.Kill(-m.proc.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-m.proc.done:
	case <-time.After(30 * time.Second):
		m.stop(t)
	}
}

// restart starts a stopped member again on its data directory and waits
// until it serves. t owns the new process. A process that exits before it
// serves (its peer port not yet free after the last one, on a loaded
// machine) is started again, up to three times.
func (m *member) restart(t *testing.T, c *cluster) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		m.proc = startProcess(t, m.name+"-again", filepath.Join(c.dir, fmt.Sprintf("%s-again-%d.log", m.name, attempt)), c.etcdBin,
			append(append([]string{}, m.args...), "--initial-cluster-state", "existing")...)
		deadline := time.Now().Add(2 * time.Minute)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_, err := c.etcd.Status(ctx, m.url)
			cancel()
			switch {
			case err == nil:
				return
			case m.proc.exited() && attempt < 3:
				t.Logf("%s exited before it served (attempt %d): starting it again", m.name, attempt)
			case m.proc.exited(), time.Now().After(deadline):
				t.Fatalf("%s back: %v (exited: %v)", m.name, err, m.proc.exited())
			default:
				time.Sleep(200 * time.Millisecond)
				continue
			}
			break
		}
		time.Sleep(time.Second)
	}
}

// leader returns the member that leads now, waiting out an election or a
// Status answered late on a loaded machine.
func (c *cluster) leader(t *testing.T) *member {
	t.Helper()
	var l *member
	waitFor(t, 30*time.Second, "a member that says it leads", func() error {
		if l = c.findLeader(); l == nil {
			return errString("none")
		}
		return nil
	})
	return l
}

// findLeader returns the member that says it leads, or nil when none
// answers that it does.
func (c *cluster) findLeader() *member {
	for _, m := range c.members {
		if m.proc.exited() {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		st, err := c.etcd.Status(ctx, m.url)
		cancel()
		if err == nil && st.Leader == st.Header.MemberId {
			return m
		}
	}
	return nil
}

// moveLeader moves the leadership from the member that leads, from, to
// to, as etcdctl move-leader does (the request goes to the leader), and
// waits until to leads.
func (c *cluster) moveLeader(t *testing.T, from, to *member) {
	t.Helper()
	cli := c.etcdClient(t, from.url)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := cli.Status(ctx, to.url)
	mustNoErr(t, "status of "+to.name, err)
	_, err = cli.MoveLeader(ctx, st.Header.MemberId)
	mustNoErr(t, "move the leadership to "+to.name, err)
	waitFor(t, 30*time.Second, to.name+" to lead", func() error {
		if l := c.findLeader(); l == nil {
			return errString("no member says it leads")
		} else if l != to {
			return errString(l.name + " leads")
		}
		return nil
	})
}

// TestThreeMemberCluster: on a 3-member etcd, scan, purge and restore work
// with one member down, and a purge survives its leader being killed in the
// middle: the transactions in flight are retried after the election, and
// every key's outcome is known.
func TestThreeMemberCluster(t *testing.T) {
	c := startCluster(t, clusterOptions{members: 3})
	want := plantGhosts(t, c)
	ghosts := ghostKeys(want, "kb-system")
	var down *member

	t.Run("one member down", func(t *testing.T) {
		down = c.members[2]
		if c.leader(t) == down {
			down = c.members[1]
		}
		down.stop(t)
		rep, _ := c.scanJSON(t, "--terminating-after", "1ns")
		assertFindings(t, rep, want)
		root := filepath.Join(t.TempDir(), "backups")
		out, errOut, code := c.regghost(t, "", "purge", "-n", "kb-system", "--backup-dir", root, "--confirm", "--yes")
		if code != 0 || !strings.Contains(out, "Deleted 5 of 5 planned keys") || strings.Contains(out, "Snapshot from "+down.url) {
			t.Fatalf("purge: exit %d: %s\n%s", code, errOut, out)
		}
		if _, errOut, code := c.regghost(t, "", "restore", onlyBackupDir(t, root), "--confirm", "--yes"); code != 0 {
			t.Fatalf("restore: exit %d: %s", code, errOut)
		}
		for _, k := range ghosts {
			if c.value(t, k) == nil {
				t.Errorf("%s is not back", k)
			}
		}
	})
	// The member comes back for the next subtest; its process belongs to
	// the whole test, so no subtest's cleanup stops it.
	if down == nil {
		t.FailNow()
	}
	down.restart(t, c)
	t.Run("the leader killed in the middle of a purge", func(t *testing.T) {
		c.createNamespace(t, "big")
		for i := 0; i < 6; i++ {
			c.createConfigMap(t, "big", "cm"+strconv.Itoa(i))
		}
		c.forceDelete(t, "/registry/namespaces/big")
		root := filepath.Join(t.TempDir(), "backups")
		cmd, out, errOut := c.startSlowPurge(t, root, "-n", "big")
		c.leader(t).stop(t)
		if err := cmd.Wait(); err != nil || !strings.Contains(out.String(), "Deleted 6 of 6 planned keys") {
			t.Fatalf("purge through a leader election: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errOut.String())
		}
		for i := 0; i < 6; i++ {
			if c.value(t, "/registry/configmaps/big/cm"+strconv.Itoa(i)) != nil {
				t.Errorf("cm%d is still in etcd", i)
			}
		}
		audit, _ := os.ReadFile(filepath.Join(onlyBackupDir(t, root), backup.AuditFile))
		if n := strings.Count(string(audit), `"outcome":"deleted"`); n < 6 {
			t.Errorf("the audit log has %d deletes, want an outcome for all 6:\n%s", n, audit)
		}
	})
}
