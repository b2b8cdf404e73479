package etcdwrite

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"syscall"
	"time"
)

// Holder is who holds regghost's etcd lock, as LockHolderKey says it:
// "WHAT (pid PID on HOST, since SINCE)", text a person reads in a
// refusal and Lock parses back to tell a crashed holder.
type Holder struct {
	// What is the command ("regghost purge namespace kb-system").
	What string
	PID  int
	Host string
	// Since is when it took the lock.
	Since time.Time
}

// String is the holder key's value.
func (h Holder) String() string {
	return fmt.Sprintf("%s (pid %d on %s, since %s)", h.What, h.PID, h.Host, h.Since.UTC().Format(time.RFC3339))
}

// holderText matches Holder.String; What may hold anything, so the pid,
// host and time are read from the end.
var holderText = regexp.MustCompile(`^(.*) \(pid (\d+) on ([^,()\s]*), since ([^()\s]+)\)$`)

// ParseHolder reads a holder key's value; ok is false when it is not one.
func ParseHolder(s string) (h Holder, ok bool) {
	m := holderText.FindStringSubmatch(s)
	if m == nil {
		return Holder{}, false
	}
	pid, err := strconv.Atoi(m[2])
	if err != nil || pid <= 0 {
		return Holder{}, false
	}
	since, err := time.Parse(time.RFC3339, m[4])
	if err != nil {
		return Holder{}, false
	}
	return Holder{What: m[1], PID: pid, Host: m[3], Since: since}, true
}

// processRunning reports whether process pid of this host is running. A
// process that has ended but is not reaped yet (a zombie) is not; one
// that exists but is not ours to signal is.
func processRunning(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// The state follows the command name in parentheses, which may hold
	// anything: it is read after the last ')'.
	for i := len(stat) - 1; i >= 0; i-- {
		if stat[i] == ')' {
			return !(i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X'))
		}
	}
	return true
}
