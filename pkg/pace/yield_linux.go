package pace

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// Yield lowers this process's CPU priority to nice (0 to 19; a value at
// or below the present one changes nothing), so that where its cores are
// all busy the other processes of its CPU group run before regghost's
// decoding and judging. Linux weighs nice only among the tasks of one
// cgroup (or one session's autogroup): etcd and kube-apiserver in a
// cgroup of their own (kubepods.slice, a systemd unit) are shared with
// by cgroup weight, which nice does not change; there an operator gives
// regghost a lower weight with `systemd-run --scope -p CPUWeight=20`.
// Linux keeps a nice value per thread, so every thread the Go runtime
// started so far is set; a thread started later inherits it from the one
// that starts it.
func Yield(nice int) error {
	if nice <= 0 {
		return nil
	}
	nice = min(nice, 19)
	// A thread the runtime starts while the list is read may come from
	// one not lowered yet: the list is read again until a pass changes
	// nothing.
	for pass := 0; pass < 10; pass++ {
		changed, err := yieldOnce(nice)
		if err != nil || !changed {
			return err
		}
	}
	return nil
}

// yieldOnce lowers every thread listed now; changed says whether any was.
func yieldOnce(nice int) (changed bool, err error) {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return false, fmt.Errorf("list this process's threads: %w", err)
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		cur, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
		if err != nil {
			// Gone since it was listed.
			continue
		}
		// The raw getpriority answers 20 - nice.
		if 20-cur >= nice {
			continue
		}
		if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, nice); err != nil {
			if errors.Is(err, syscall.ESRCH) {
				continue
			}
			return changed, fmt.Errorf("lower thread %d's CPU priority to nice %d: %w", tid, nice, err)
		}
		changed = true
	}
	return changed, nil
}
