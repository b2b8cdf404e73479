package etcdwrite

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// secondUser is the uid a regghost that is not root runs as in
// TestNodeLockInASharedTmp ("nobody").
const secondUser = 65534

// TestNodeLockInASharedTmp: a regghost run by a user who is not root keeps
// its node lock in $TMPDIR, where another user may have been first. Run as
// that user (a second process, uid 65534): a directory another user made
// (to plant a symlink the open would follow and truncate, or to hold the
// lock and write the refusal's holder text) is refused and the symlink's
// target left as it was; so is a symlink in its own directory; with the
// directory its own, it takes the lock.
func TestNodeLockInASharedTmp(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("running a second user needs root")
	}
	// The test binary, where the second user may run it.
	pub, err := os.MkdirTemp("", "regghost-lock-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(pub) })
	mustChmod(t, pub, 0o755)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(pub, "etcdwrite.test")
	copyFile(t, self, bin, 0o755)
	mustNoErr(t, os.Mkdir(filepath.Join(pub, "run"), 0o755))

	tests := []struct {
		name string
		// plant prepares the shared $TMPDIR before the second user runs.
		plant func(t *testing.T, tmp, victim string)
		want  string // in the child's answer
	}{
		{"a directory another user made, with a symlink in it", func(t *testing.T, tmp, victim string) {
			d := filepath.Join(tmp, fmt.Sprintf("regghost-locks-%d", secondUser))
			mustNoErr(t, os.Mkdir(d, 0o777))
			mustChmod(t, d, 0o777)
			mustNoErr(t, os.Symlink(victim, filepath.Join(d, "cluster-c1.lock")))
		}, "belongs to uid 0, not to this user (uid 65534)"},
		{"a directory another user made, 0700, nothing in it", func(t *testing.T, tmp, victim string) {
			mustNoErr(t, os.Mkdir(filepath.Join(tmp, fmt.Sprintf("regghost-locks-%d", secondUser)), 0o700))
		}, "belongs to uid 0, not to this user (uid 65534): another user made it first; set REGGHOST_LOCK_DIR"},
		{"the directory a symlink to another's", func(t *testing.T, tmp, victim string) {
			other := filepath.Join(tmp, "elsewhere")
			mustNoErr(t, os.Mkdir(other, 0o700))
			mustNoErr(t, os.Chown(other, secondUser, secondUser))
			mustNoErr(t, os.Symlink(other, filepath.Join(tmp, fmt.Sprintf("regghost-locks-%d", secondUser))))
		}, "is a symlink, not a directory of this user's"},
		{"its own directory, a symlink planted in it", func(t *testing.T, tmp, victim string) {
			d := filepath.Join(tmp, fmt.Sprintf("regghost-locks-%d", secondUser))
			mustNoErr(t, os.Mkdir(d, 0o700))
			mustNoErr(t, os.Chown(d, secondUser, secondUser))
			mustNoErr(t, os.Symlink(victim, filepath.Join(d, "cluster-c1.lock")))
		}, "too many levels of symbolic links"},
		{"its own directory, writable by others", func(t *testing.T, tmp, victim string) {
			d := filepath.Join(tmp, fmt.Sprintf("regghost-locks-%d", secondUser))
			mustNoErr(t, os.Mkdir(d, 0o700))
			mustChmod(t, d, 0o777)
			mustNoErr(t, os.Chown(d, secondUser, secondUser))
		}, "may be written by others"},
		{"nothing there: it makes its own and locks", func(t *testing.T, tmp, victim string) {}, fmt.Sprintf("/regghost-locks-%d/cluster-c1.lock", secondUser)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmp, err := os.MkdirTemp(pub, "tmp-")
			mustNoErr(t, err)
			mustChmod(t, tmp, 0o1777)
			victim := filepath.Join(tmp, "victim")
			mustNoErr(t, os.WriteFile(victim, []byte("precious\n"), 0o600))
			mustNoErr(t, os.Chown(victim, secondUser, secondUser))
			tt.plant(t, tmp, victim)

			cmd := exec.Command(bin, "-test.run", "^TestNodeLockChild$", "-test.v")
			// The node's lock directory not made yet, where this user
			// cannot make it: $TMPDIR's is used.
			cmd.Env = []string{"TMPDIR=" + tmp, "REGGHOST_LOCK_CHILD=c1", "REGGHOST_LOCK_CHILD_RUN=" + filepath.Join(pub, "run", "regghost"), "PATH=/usr/bin:/bin"}
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: secondUser, Gid: secondUser}}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("the second user's run: %v\n%s", err, out)
			}
			if !strings.Contains(string(out), tt.want) {
				t.Errorf("the second user's run says:\n%s\nwant %q in it", out, tt.want)
			}
			if b, _ := os.ReadFile(victim); string(b) != "precious\n" {
				t.Errorf("the symlink's target was written: %q", b)
			}
		})
	}
}

// TestNodeLockChild is TestNodeLockInASharedTmp's second user: it takes the
// node lock of cluster $REGGHOST_LOCK_CHILD and says what happened.
func TestNodeLockChild(t *testing.T) {
	cluster := os.Getenv("REGGHOST_LOCK_CHILD")
	if cluster == "" {
		t.Skip("run by TestNodeLockInASharedTmp")
	}
	if d := os.Getenv("REGGHOST_LOCK_CHILD_RUN"); d != "" {
		runLockDir = d
	}
	unlock, path, err := NodeLock(cluster, "test")
	if err != nil {
		fmt.Println("ERR", err)
		return
	}
	defer unlock()
	fmt.Println("LOCKED", path)
}

func mustNoErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func mustChmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	// Mkdir's mode goes through the umask; chmod sets what the test means.
	mustNoErr(t, os.Chmod(path, mode))
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	in, err := os.Open(from)
	mustNoErr(t, err)
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	mustNoErr(t, err)
	_, err = io.Copy(out, in)
	mustNoErr(t, err)
	mustNoErr(t, out.Close())
}

// TestNodeLockRefusesAnotherUsersRunDir: once /run/regghost exists it is
// the node's one lock directory; a second user whose it is not is refused
// there, never sent to lock elsewhere and write beside the first.
func TestNodeLockRefusesAnotherUsersRunDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("running a second user needs root")
	}
	pub, err := os.MkdirTemp("", "regghost-lock-test-")
	mustNoErr(t, err)
	t.Cleanup(func() { os.RemoveAll(pub) })
	mustChmod(t, pub, 0o755)
	self, err := os.Executable()
	mustNoErr(t, err)
	bin := filepath.Join(pub, "etcdwrite.test")
	copyFile(t, self, bin, 0o755)
	run := filepath.Join(pub, "run")
	mustNoErr(t, os.MkdirAll(filepath.Join(run, "regghost"), 0o700)) // root's, as a root regghost made it
	mustChmod(t, run, 0o755)
	tmp, err := os.MkdirTemp(pub, "tmp-")
	mustNoErr(t, err)
	mustChmod(t, tmp, 0o1777)
	cmd := exec.Command(bin, "-test.run", "^TestNodeLockChild$", "-test.v")
	cmd.Env = []string{"TMPDIR=" + tmp, "REGGHOST_LOCK_CHILD=c1", "REGGHOST_LOCK_CHILD_RUN=" + filepath.Join(run, "regghost"), "PATH=/usr/bin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: secondUser, Gid: secondUser}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the second user's run: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "ERR ") || !strings.Contains(string(out), "belongs to uid 0") {
		t.Errorf("a second user beside root's lock directory:\n%s\nwant a refusal naming its owner", out)
	}
}
