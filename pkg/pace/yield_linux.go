package pace

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// Yield lowers this process's CPU priority to nice (0 to 19; a value at
// or below the present one changes nothing), so that on a node whose
// cores are all busy etcd's and kube-apiserver's threads are run before
// regghost's: a read or delete paced by etcd's latency still costs the
// CPU that decodes and judges what it read, and on a control-plane node
// that CPU is etcd's too. Linux keeps a nice value per thread, so every
// thread the Go runtime started so far is set; a thread started later
// inherits it from the one that starts it.
func Yield(nice int) error {
	if nice <= 0 {
		return nil
	}
	nice = min(nice, 19)
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return fmt.Errorf("list this process's threads: %w", err)
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
			return fmt.Errorf("lower thread %d's CPU priority to nice %d: %w", tid, nice, err)
		}
	}
	return nil
}
