package etcdwrite

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// ErrNoSpace is returned (wrapped) when a write that puts keys meets etcd's
// NOSPACE alarm: etcd refuses every put, lease grant and transaction that
// would put until space is reclaimed and the alarm disarmed.
var ErrNoSpace = errors.New("etcd's NOSPACE alarm is raised (mvcc: database space exceeded)")

// NoSpace reports whether etcd's NOSPACE alarm is raised (it is cluster-wide:
// one member's answer tells). An etcd that cannot list alarms (kine) has none.
func NoSpace(ctx context.Context, cli *clientv3.Client) (bool, error) {
	resp, err := cli.AlarmList(ctx)
	if err != nil {
		return false, fmt.Errorf("list etcd's alarms: %w", err)
	}
	for _, a := range resp.Alarms {
		if a.Alarm == etcdserverpb.AlarmType_NOSPACE {
			return true, nil
		}
	}
	return false, nil
}

// IsNoSpace reports whether err is etcd's "database space exceeded".
func IsNoSpace(err error) bool {
	return errors.Is(err, rpctypes.ErrNoSpace) || errors.Is(err, rpctypes.ErrGRPCNoSpace) ||
		(err != nil && strings.Contains(err.Error(), rpctypes.ErrGRPCNoSpace.Error()))
}

// LockDirEnv names the variable that moves NodeLock's directory.
const LockDirEnv = "REGGHOST_LOCK_DIR"

// runLockDir is the node's lock directory: memory-backed, gone at reboot,
// shared by every process of the node.
var runLockDir = "/run/regghost"

// nodeLockDir is where NodeLock keeps its files: $REGGHOST_LOCK_DIR, else
// /run/regghost. Once that exists it is the node's one lock directory:
// another user's is refused (a second writer must not lock elsewhere and
// write beside the first). Only where it does not exist and cannot be made
// (not root) is regghost-locks-<uid> in $TMPDIR used.
func nodeLockDir() (string, error) {
	if d := os.Getenv(LockDirEnv); d != "" {
		return ownLockDir(d)
	}
	if _, err := os.Lstat(runLockDir); err == nil {
		return ownLockDir(runLockDir)
	}
	if err := os.Mkdir(runLockDir, 0o700); err == nil || errors.Is(err, fs.ErrExist) {
		return ownLockDir(runLockDir)
	}
	return ownLockDir(filepath.Join(os.TempDir(), fmt.Sprintf("regghost-locks-%d", os.Geteuid())))
}

// ownLockDir makes dir (0700) when it is missing and checks it is this
// user's own: a real directory (not a symlink), owned by the effective
// user, that nobody else may write. In a shared directory ($TMPDIR)
// another user may have made it first, to plant a symlink that the lock's
// open would follow and truncate, or to hold the lock and write the
// refusal's holder text: refused, naming who owns it.
func ownLockDir(dir string) (string, error) {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return dir, err
		}
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return dir, err
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return dir, fmt.Errorf("%s is a symlink, not a directory of this user's; set %s to a directory of yours", dir, LockDirEnv)
	case !fi.IsDir():
		return dir, fmt.Errorf("%s is not a directory; set %s to a directory of yours", dir, LockDirEnv)
	case st != nil && int(st.Uid) != os.Geteuid():
		return dir, fmt.Errorf("%s belongs to uid %d, not to this user (uid %d): another user made it first; set %s to a directory of yours", dir, st.Uid, os.Geteuid(), LockDirEnv)
	case fi.Mode().Perm()&0o022 != 0:
		return dir, fmt.Errorf("%s may be written by others (mode %v); make it 0700 or set %s to a directory of yours", dir, fi.Mode().Perm(), LockDirEnv)
	}
	return dir, nil
}

// NodeLock is the writers' lock of this node: an exclusive flock on a file
// named after the cluster (its etcd cluster ID and kube-system UID), held
// until unlock or the process ends (the kernel drops it with the process,
// so a killed regghost leaves nothing to wait out). Every write takes it,
// before the etcd lock: it is all there is where etcd cannot hold a lock
// (kine has no leases; under its NOSPACE alarm etcd refuses the lease),
// and it stops a second regghost on this node whichever of the two the
// other took. It does not stop one on another node.
func NodeLock(cluster, what string) (unlock func(), path string, err error) {
	dir, err := nodeLockDir()
	if err != nil {
		return nil, "", fmt.Errorf("%w: this node's lock directory: %v", ErrNoLock, err)
	}
	if cluster == "" {
		cluster = "unknown"
	}
	path = filepath.Join(dir, "cluster-"+cluster+".lock")
	// Never through a symlink (its target would be truncated), and only a
	// regular file.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, "", fmt.Errorf("%w: open %s: %v", ErrNoLock, path, err)
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, "", fmt.Errorf("%w: %s is not a regular file", ErrNoLock, path)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		buf := make([]byte, 512)
		n, _ := f.ReadAt(buf, 0)
		holder := buf[:n]
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, "", fmt.Errorf("%w: %s (this node's lock %s); wait for it to finish and run again", ErrLocked, strings.TrimSpace(string(holder)), path)
		}
		return nil, "", fmt.Errorf("%w: lock %s: %v", ErrNoLock, path, err)
	}
	host, _ := os.Hostname()
	holder := Holder{What: what, PID: os.Getpid(), Host: host, Since: time.Now().UTC().Truncate(time.Second)}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(holder.String()+"\n"), 0)
	}
	return func() {
		_ = f.Truncate(0)
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, path, nil
}

// RefuseEtcdHolder refuses while a regghost holds the etcd lock (taken
// before etcd's NOSPACE alarm, its lease kept alive, or on another node):
// a writer that cannot take the etcd lock must not write beside it. A
// holder whose lease cannot be read is taken to be alive.
func RefuseEtcdHolder(ctx context.Context, cli *clientv3.Client) error {
	st, err := readLockState(ctx, cli)
	if err != nil {
		return fmt.Errorf("%w (%v)", ErrNoLock, err)
	}
	if st.lease != 0 && (st.ttl > 0 || st.ttlErr != nil) {
		return fmt.Errorf("%w: %s; wait for it to finish and run again", ErrLocked, st.holderText())
	}
	return nil
}
