package reclaim

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/pkg/etcdwrite"
)

// TestLockWritersLost: the lost channel of etcd's lock closes when its
// lease ends while held (as when a defragmentation outlasts it), and
// lockLost then says why reclaim stops.
func TestLockWritersLost(t *testing.T) {
	t.Setenv(etcdwrite.LockDirEnv, t.TempDir())
	m := start(t, t.TempDir(), 64<<20)
	lock, err := lockWriters(context.Background(), m.options(t))
	if err != nil {
		t.Fatal(err)
	}
	defer lock.unlock()
	if lock.warning != "" || lock.lost == nil || lockLost(lock.lost) != "" {
		t.Fatalf("etcd's lock: warning %q, lost %v (%q)", lock.warning, lock.lost, lockLost(lock.lost))
	}
	owner, err := m.cli.Get(context.Background(), etcdwrite.LockPrefix+"/", clientv3.WithPrefix())
	if err != nil || len(owner.Kvs) == 0 {
		t.Fatalf("no lock owner key: %v", err)
	}
	if _, err := m.cli.Revoke(context.Background(), clientv3.LeaseID(owner.Kvs[0].Lease)); err != nil {
		t.Fatal(err)
	}
	// The session learns it at its next renewal, a third of the TTL on.
	select {
	case <-lock.lost:
	case <-time.After(time.Duration(etcdwrite.LockTTL) * time.Second):
		t.Fatal("lost did not close when the lock's lease ended")
	}
	if why := lockLost(lock.lost); !strings.Contains(why, "regghost's etcd lock was lost") || !strings.Contains(why, "defragmentation") {
		t.Errorf("lockLost = %q", why)
	}
}

// TestLockLostStopsTheNextStep: with etcd's lock lost, reclaim
// defragments no member and disarms nothing; with only this node's lock
// (lost nil) nothing stops it.
func TestLockLostStopsTheNextStep(t *testing.T) {
	if lockLost(nil) != "" {
		t.Error("only this node's lock held: lockLost says it was lost")
	}
	lost := make(chan struct{})
	close(lost)
	m := start(t, t.TempDir(), 16<<20)
	fill(t, m.cli)
	if _, err := m.cli.Delete(context.Background(), "/big/", clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	o := m.options(t)
	plan, err := Survey(context.Background(), o)
	if err != nil || len(plan.Refusals) > 0 {
		t.Fatalf("Survey: %v, %v", err, plan.Refusals)
	}

	t.Run("the next defragmentation", func(t *testing.T) {
		res := &Result{Plan: plan, Members: []MemberResult{}, Compaction: &Compaction{Revision: plan.Revision}}
		err := defragmentAll(context.Background(), o, res, lost)
		if err == nil || !strings.Contains(err.Error(), "stopped at member default: regghost's etcd lock was lost") || !strings.Contains(err.Error(), "NOSPACE was not disarmed") {
			t.Fatalf("defragmentAll: %v", err)
		}
		if len(res.Members) != 1 || res.Members[0].Outcome != NotReached {
			t.Errorf("members %+v, want default not reached", res.Members)
		}
	})

	t.Run("the disarm", func(t *testing.T) {
		// The defragmentation above was stopped after its member had
		// compacted (settle).
		if _, err := m.cli.Compact(context.Background(), plan.Revision, clientv3.WithCompactPhysical()); err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
			t.Fatal(err)
		}
		if _, err := m.cli.Defragment(context.Background(), m.ep); err != nil {
			t.Fatal(err)
		}
		res := &Result{Plan: plan, Members: []MemberResult{}}
		err := disarm(context.Background(), o, res, lost)
		if err == nil || !strings.Contains(err.Error(), "NOSPACE was not disarmed: regghost's etcd lock was lost") {
			t.Fatalf("disarm: %v", err)
		}
		if res.Disarm == nil || res.Disarm.Disarmed || len(res.Disarm.Alarms) != 1 || !noSpace(t, m.cli) {
			t.Errorf("disarm %+v: NOSPACE was disarmed", res.Disarm)
		}
		// Held, the same disarm goes through.
		if err := disarm(context.Background(), o, res, make(chan struct{})); err != nil || !res.Disarm.Disarmed {
			t.Errorf("disarm with the lock held: %v, %+v", err, res.Disarm)
		}
		if _, err := m.cli.Put(context.Background(), "/after", "x"); err != nil {
			t.Errorf("put after the disarm: %v", err)
		}
	})
}
