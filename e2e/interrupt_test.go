package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdwrite"
)

// TestInterruptedPurgeAndConcurrentWriters: a SIGINT in the middle of a
// purge finishes the transaction in flight, leaves an audit trail with an
// outcome for every key, prints how to undo, and exits non-zero; backup ls
// shows the purge as unfinished. A second writer is refused with who holds
// the etcd lock.
func TestInterruptedPurgeAndConcurrentWriters(t *testing.T) {
	parallel(t)
	c := startCluster(t, clusterOptions{})
	c.createNamespace(t, "big")
	for i := 0; i < 6; i++ {
		c.createConfigMap(t, "big", fmt.Sprintf("cm%d", i))
	}
	c.forceDelete(t, "/registry/namespaces/big")
	root := filepath.Join(t.TempDir(), "backups")
	// Interrupted once the first delete is in the audit log.
	cmd, out, errOut := c.startSlowPurge(t, root, "-n", "big")
	mustNoErr(t, "interrupt", cmd.Process.Signal(syscall.SIGINT))
	err := cmd.Wait()
	if err == nil || !strings.Contains(errOut.String(), "interrupted") || !strings.Contains(out.String(), "regghost restore") {
		t.Fatalf("interrupted purge: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errOut.String())
	}
	dir := onlyBackupDir(t, root)
	audit, _ := os.ReadFile(filepath.Join(dir, backup.AuditFile))
	deleted := strings.Count(string(audit), `"outcome":"deleted"`)
	if deleted == 0 || deleted == 6 {
		t.Errorf("%d of 6 deleted; the interrupt did not land in the middle", deleted)
	}
	for i := 0; i < 6; i++ {
		if !strings.Contains(string(audit), fmt.Sprintf("/registry/configmaps/big/cm%d", i)) {
			t.Errorf("cm%d has no line in the audit log:\n%s", i, audit)
		}
	}
	lsOut, _, _ := runBinary(t, "", "backup", "ls", "--backup-dir", root)
	if !strings.Contains(lsOut, "UNFINISHED") {
		t.Errorf("backup ls does not show the unfinished purge:\n%s", lsOut)
	}

	// Someone else is writing: restore waits for nobody and refuses.
	unlock, err := etcdwrite.Lock(context.Background(), c.etcd, "regghost purge namespace other")
	mustNoErr(t, "take the lock", err)
	_, stderr, code := c.regghost(t, "", "restore", dir, "--confirm", "--yes")
	if code != 1 || !strings.Contains(stderr, "another regghost is writing") || !strings.Contains(stderr, "regghost purge namespace other") {
		t.Errorf("restore while locked: exit %d: %s", code, stderr)
	}
	unlock()
	if _, stderr, code := c.regghost(t, "", "restore", dir, "--confirm", "--yes"); code != 0 {
		t.Errorf("restore after the lock is free: exit %d: %s", code, stderr)
	}
	for i := 0; i < 6; i++ {
		if c.value(t, fmt.Sprintf("/registry/configmaps/big/cm%d", i)) == nil {
			t.Errorf("cm%d is not back", i)
		}
	}
}
