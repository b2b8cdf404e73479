package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/regghost/regghost/pkg/etcdwrite"
)

// TestRestoreWaitsOutAKilledPurge: a purge killed with SIGKILL while it
// holds the etcd lock leaves the lock on a lease nobody renews. A restore
// run at once says the holder (this host, its pid) is no longer running,
// waits for the lease to expire instead of refusing, and puts every key
// back.
func TestRestoreWaitsOutAKilledPurge(t *testing.T) {
	c := startCluster(t, clusterOptions{})
	c.createNamespace(t, "crash")
	for i := 0; i < 6; i++ {
		c.createConfigMap(t, "crash", fmt.Sprintf("cm%d", i))
	}
	c.forceDelete(t, "/registry/namespaces/crash")
	root := filepath.Join(t.TempDir(), "backups")
	cmd, _, errOut := c.startSlowPurge(t, root, "-n", "crash")
	mustNoErr(t, "kill -9 the purge", cmd.Process.Kill())
	_ = cmd.Wait()
	killed := cmd.Process.Pid

	// The killed purge still holds the lock: its lease runs until its TTL.
	resp, err := c.etcd.Get(context.Background(), etcdwrite.LockHolderKey)
	mustNoErr(t, "read the lock holder", err)
	if len(resp.Kvs) != 1 || !strings.Contains(string(resp.Kvs[0].Value), fmt.Sprintf("regghost purge namespace crash (pid %d on ", killed)) {
		t.Fatalf("the killed purge does not hold the lock: %v\npurge stderr:\n%s", resp.Kvs, errOut.String())
	}
	dir := onlyBackupDir(t, root)
	start := time.Now()
	stdout, stderr, code := c.regghost(t, "", "restore", dir, "--confirm", "--yes")
	took := time.Since(start)
	if code != 0 {
		t.Fatalf("restore right after the kill: exit %d after %s\nstdout:\n%s\nstderr:\n%s", code, took, stdout, stderr)
	}
	why := fmt.Sprintf("regghost: the lock is held by 'regghost purge namespace crash' (pid %d on this host), which is no longer running; waiting up to ", killed)
	if !strings.Contains(oneLine(stderr), why) || !strings.Contains(oneLine(stderr), "for its lease to expire") {
		t.Errorf("restore's stderr does not say why it waited (want %q):\n%s", why, stderr)
	}
	if took > time.Duration(etcdwrite.LockTTL+15)*time.Second {
		t.Errorf("restore waited %s, more than the lease's TTL", took)
	}
	for i := 0; i < 6; i++ {
		if c.value(t, fmt.Sprintf("/registry/configmaps/crash/cm%d", i)) == nil {
			t.Errorf("cm%d is not back", i)
		}
	}
	if resp, err := c.etcd.Get(context.Background(), etcdwrite.LockHolderKey); err != nil || len(resp.Kvs) != 0 {
		t.Errorf("the lock is still held after the restore: %v %v", resp.Kvs, err)
	}
}
