package pace

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
)

// niceOf is each thread's nice value, by thread ID.
func niceOf(t *testing.T) map[int]int {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	got := map[int]int{}
	for _, e := range tasks {
		tid, _ := strconv.Atoi(e.Name())
		if p, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid); err == nil {
			got[tid] = 20 - p
		}
	}
	return got
}

// TestYieldLowersEveryThread runs in a process of its own (the nice value
// of a test binary's threads cannot be raised back without privilege).
func TestYieldLowersEveryThread(t *testing.T) {
	if os.Getenv("PACE_YIELD_CHILD") == "" {
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		cmd := []string{"-test.run=^TestYieldLowersEveryThread$", "-test.count=1"}
		c := execCommand(exe, cmd...)
		c.Env = append(os.Environ(), "PACE_YIELD_CHILD=1")
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		return
	}
	for tid, n := range niceOf(t) {
		if n >= 10 {
			t.Skipf("thread %d already runs at nice %d", tid, n)
		}
	}
	if err := Yield(10); err != nil {
		t.Fatal(err)
	}
	// Threads started after Yield inherit it: start a few.
	done := make(chan struct{})
	for range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := 0; i < 1e6; i++ {
				_ = i * i
			}
		}()
	}
	for range 4 {
		<-done
	}
	for tid, n := range niceOf(t) {
		if n != 10 {
			t.Errorf("thread %d runs at nice %d, want 10", tid, n)
		}
	}
	// A lower value than the present one changes nothing.
	if err := Yield(5); err != nil {
		t.Fatal(err)
	}
	for tid, n := range niceOf(t) {
		if n != 10 {
			t.Errorf("after Yield(5) thread %d runs at nice %d, want 10 still", tid, n)
		}
	}
}

var execCommand = exec.Command
