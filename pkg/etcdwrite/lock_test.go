package etcdwrite

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/notice"
)

// holdLock takes the lock as another regghost would, on a session of ttl
// seconds, and writes h as its holder. crash stops renewing the lease
// without revoking it, as a killed regghost leaves it.
func holdLock(t *testing.T, cli *clientv3.Client, ttl int, h Holder) (crash func()) {
	t.Helper()
	ctx := context.Background()
	s, err := concurrency.NewSession(cli, concurrency.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := concurrency.NewMutex(s, LockPrefix).TryLock(ctx); err != nil {
		t.Fatalf("take the lock: %v", err)
	}
	if _, err := cli.Put(ctx, LockHolderKey, h.String(), clientv3.WithLease(s.Lease())); err != nil {
		t.Fatal(err)
	}
	return s.Orphan
}

// deadPID is the pid of a process of this host that has ended.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// TestLockWaitsOutACrashedHolder: a lock held by a regghost of this host
// that is no longer running, or on a lease no longer renewed, is waited
// for (one line says why) and taken once the lease expires; one held by a
// running regghost, or by another host's whose lease is renewed, is
// refused at once with who holds it.
func TestLockWaitsOutACrashedHolder(t *testing.T) {
	host, _ := os.Hostname()
	tests := []struct {
		name string
		ttl  int
		// holder is what the holder key says; pid 0 is a dead pid.
		holder Holder
		crash  bool
		// age is how long the crashed lease goes unrenewed before Lock.
		age    time.Duration
		waits  bool
		notice string
	}{
		{name: "this host, the process is gone", ttl: 2, holder: Holder{What: "regghost purge namespace a", Host: host}, crash: true,
			waits: true, notice: "the lock is held by 'regghost purge namespace a' (pid "},
		{name: "this host, the process runs", ttl: 30, holder: Holder{What: "regghost purge namespace a", PID: os.Getpid(), Host: host}},
		{name: "another host", ttl: 30, holder: Holder{What: "regghost purge namespace a", Host: "other-host"}, crash: true},
		{name: "another host, the lease is no longer renewed", ttl: 4, holder: Holder{What: "regghost purge namespace a", Host: "other-host"}, crash: true, age: 2500 * time.Millisecond,
			waits: true, notice: "(pid "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cli, _ := etcdtest.Start(t)
			h := tt.holder
			if h.PID == 0 {
				h.PID = deadPID(t)
			}
			h.Since = time.Now().UTC().Truncate(time.Second)
			crash := holdLock(t, cli, tt.ttl, h)
			if tt.crash {
				crash()
			}
			time.Sleep(tt.age)
			var said []notice.Notice
			start := time.Now()
			unlock, err := Lock(context.Background(), cli, "regghost restore b", WithLockNotices(notice.Collect(&said)))
			took := time.Since(start)
			if !tt.waits {
				if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), h.String()) {
					t.Fatalf("Lock: %v; want a refusal naming %q", err, h.String())
				}
				if took > 2*time.Second || len(said) > 0 {
					t.Errorf("refused after %s, saying %q; want at once, silently", took, notice.Texts(said))
				}
				return
			}
			if err != nil {
				t.Fatalf("Lock after %s: %v (notices %q)", took, err, notice.Texts(said))
			}
			defer unlock()
			// One notice, said as it is (cmd lays it out).
			if len(said) != 1 {
				t.Fatalf("notices %q, want one", notice.Texts(said))
			}
			line := said[0].Text
			if said[0].Kind != notice.Info || !strings.Contains(line, tt.notice) || !strings.Contains(line, "waiting up to") {
				t.Errorf("notice %q", line)
			}
			if tt.holder.Host == host && !strings.Contains(line, "on this host), which is no longer running") {
				t.Errorf("notice %q does not say the process is gone", line)
			}
			if tt.holder.Host != host && !strings.Contains(line, "whose lease is about to expire") {
				t.Errorf("notice %q does not say the lease is not renewed", line)
			}
			resp, err := cli.Get(context.Background(), LockHolderKey)
			if err != nil || len(resp.Kvs) != 1 || !strings.HasPrefix(string(resp.Kvs[0].Value), "regghost restore b (pid ") {
				t.Errorf("holder after taking the lock: %v %v", resp, err)
			}
		})
	}
}

func TestParseHolder(t *testing.T) {
	since := time.Date(2026, 12, 2, 18, 9, 37, 0, time.UTC)
	tests := []struct {
		in   string
		want Holder
		ok   bool
	}{
		{in: Holder{What: "regghost purge namespace kb-system", PID: 123, Host: "cp-1", Since: since}.String(),
			want: Holder{What: "regghost purge namespace kb-system", PID: 123, Host: "cp-1", Since: since}, ok: true},
		{in: "regghost restore /b/x (pid 9 on a, since 2026) (pid 77 on cp-1.example.com, since 2026-12-02T18:09:37Z)",
			want: Holder{What: "regghost restore /b/x (pid 9 on a, since 2026)", PID: 77, Host: "cp-1.example.com", Since: since}, ok: true},
		{in: "unknown"},
		{in: "regghost purge (pid x on cp-1, since 2026-12-02T18:09:37Z)"},
		{in: "regghost purge (pid 0 on cp-1, since 2026-12-02T18:09:37Z)"},
		{in: "regghost purge (pid 12 on cp-1, since yesterday)"},
	}
	for _, tt := range tests {
		got, ok := ParseHolder(tt.in)
		if ok != tt.ok || (ok && (got.What != tt.want.What || got.PID != tt.want.PID || got.Host != tt.want.Host || !got.Since.Equal(tt.want.Since))) {
			t.Errorf("ParseHolder(%q) = %+v, %v; want %+v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

// TestProcessRunning: this process runs; one that ended does not.
func TestProcessRunning(t *testing.T) {
	if !processRunning(os.Getpid()) {
		t.Error("this process is not running")
	}
	if processRunning(deadPID(t)) {
		t.Error("an ended process is running")
	}
	// Ended but not reaped: a zombie has not crashed less.
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Wait() }()
	deadline := time.Now().Add(5 * time.Second)
	for processRunning(cmd.Process.Pid) {
		if time.Now().After(deadline) {
			t.Fatal("a zombie reads as running")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
