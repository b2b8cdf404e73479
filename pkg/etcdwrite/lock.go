package etcdwrite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/regghost/regghost/pkg/notice"
)

// LockPrefix is where writers of regghost take their etcd lock; it is
// outside any registry prefix.
const LockPrefix = "/regghost/lock"

// LockHolderKey holds who has the lock (Holder), on the holder's lease.
const LockHolderKey = LockPrefix + "-holder"

// LockTTL is the TTL, in seconds, of the lease a writer holds the lock on:
// a killed writer's lock goes within it.
const LockTTL = 30

// ErrLocked is returned (wrapped) when another regghost is writing.
var ErrLocked = errors.New("another regghost is writing to this etcd")

// LockOption changes how Lock goes about it.
type LockOption func(*lockConfig)

type lockConfig struct {
	notices notice.Func
	onLost  func()
}

// WithOnLost calls fn when the lock is lost while held: its lease expired
// (etcd unreachable, or regghost paused, for longer than LockTTL), and
// another writer may take it. The caller stops writing.
func WithOnLost(fn func()) LockOption {
	return func(c *lockConfig) { c.onLost = fn }
}

// WithLockNotices says why Lock waits for a crashed writer's lease to
// expire to say (nil, the default: said nowhere).
func WithLockNotices(say notice.Func) LockOption {
	return func(c *lockConfig) { c.notices = say }
}

// ErrNoLock is returned (wrapped) when the lock could not be taken for
// another reason than another writer: etcd timed out, the etcd user may not
// write the lock's keys. Nothing is written then: a writer that went on
// without the lock could write beside another operator.
var ErrNoLock = errors.New("regghost's etcd lock could not be taken")

// Lock takes the etcd lock every regghost write holds, so two operators
// never write at once; the lock lives on a lease, so a killed regghost
// releases it within its TTL. what says what this one does, for the other's
// refusal. When another regghost holds it, Lock refuses with who it is
// (ErrLocked), unless that one has crashed (a regghost of this host that is
// no longer running, or a lease that is no longer renewed): then it says so
// in one line and waits for the lease to expire, at most its TTL (waitOut).
// Any other failure is refused too (ErrNoLock, with the reason). A datastore
// without leases (kine) cannot hold it at all: the caller decides that
// before it asks (see Datastore.Limited).
func Lock(ctx context.Context, cli *clientv3.Client, what string, opts ...LockOption) (unlock func(), err error) {
	cfg := lockConfig{}
	for _, o := range opts {
		o(&cfg)
	}
	session, err := concurrency.NewSession(cli, concurrency.WithTTL(LockTTL), concurrency.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("%w: its lease was refused (%v)", ErrNoLock, err)
	}
	m := concurrency.NewMutex(session, LockPrefix)
	err = m.TryLock(ctx)
	if errors.Is(err, concurrency.ErrLocked) {
		err = waitOut(ctx, cli, m, cfg.notices)
	}
	if err != nil {
		session.Close()
		if errors.Is(err, ErrLocked) {
			return nil, err
		}
		if errors.Is(err, rpctypes.ErrPermissionDenied) || errors.Is(err, rpctypes.ErrGRPCPermissionDenied) {
			return nil, fmt.Errorf("%w: the etcd user may not write %s (grant it readwrite on that prefix)", ErrNoLock, LockPrefix)
		}
		return nil, fmt.Errorf("%w (%v)", ErrNoLock, err)
	}
	host, _ := os.Hostname()
	holder := Holder{What: what, PID: os.Getpid(), Host: host, Since: time.Now().UTC().Truncate(time.Second)}
	if _, err := cli.Put(ctx, LockHolderKey, holder.String(), clientv3.WithLease(session.Lease())); err != nil {
		uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = m.Unlock(uctx)
		cancel()
		session.Close()
		return nil, fmt.Errorf("%w: say who holds it (%v)", ErrNoLock, err)
	}
	released := make(chan struct{})
	if cfg.onLost != nil {
		go func() {
			select {
			case <-session.Done():
				cfg.onLost()
			case <-released:
			}
		}()
	}
	return func() {
		close(released)
		uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		// Only this holder's key: after a lost lease it may be another's.
		_, _ = cli.Txn(uctx).If(clientv3.Compare(clientv3.LeaseValue(LockHolderKey), "=", session.Lease())).
			Then(clientv3.OpDelete(LockHolderKey)).Commit()
		_ = m.Unlock(uctx)
		session.Close()
	}, nil
}

// lockMargin is added to a crashed holder's lease TTL left when waiting
// for it: etcd checks for expired leases every half second, and removing
// their keys is one more round through raft.
const lockMargin = 5 * time.Second

// lockPoll is how often a waiting Lock tries again.
const lockPoll = 500 * time.Millisecond

// waitOut is called when another session holds the lock. When its holder
// has crashed (lockState.crashed), it writes one line to notices saying
// why it waits and tries to take the lock again until the holder's lease
// has expired, at most the TTL it has left and lockMargin, within ctx. A
// holder that has not crashed is refused at once (ErrLocked, naming it),
// and so is one that still holds the lock when the wait is over, or a live
// one that took the lock in the meantime.
func waitOut(ctx context.Context, cli *clientv3.Client, m *concurrency.Mutex, notices notice.Func) error {
	var waitingOn clientv3.LeaseID
	var deadline time.Time
	var bound time.Duration
	for {
		st, err := readLockState(ctx, cli)
		if err != nil {
			return err
		}
		if st.lease != 0 {
			why := st.crashed()
			if why == "" {
				return fmt.Errorf("%w: %s; wait for it to finish and run again", ErrLocked, st.holderText())
			}
			if st.lease != waitingOn {
				waitingOn = st.lease
				bound = time.Duration(LockTTL)*time.Second + lockMargin
				if st.ttl >= 0 {
					bound = time.Duration(st.ttl)*time.Second + lockMargin
				}
				deadline = time.Now().Add(bound)
				notices.Info(fmt.Sprintf("the lock is held by %s, %s; waiting up to %s for its lease to expire", st.describe(), why, bound.Round(time.Second)))
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%w: %s still holds the lock after %s of waiting for its lease to expire; wait for it to finish and run again", ErrLocked, st.holderText(), bound.Round(time.Second))
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("%w: %s; its lease had not expired when the time ran out (%v)", ErrLocked, st.holderText(), ctx.Err())
			case <-time.After(lockPoll):
			}
		}
		err = m.TryLock(ctx)
		if !errors.Is(err, concurrency.ErrLocked) {
			return err
		}
	}
}

// lockState is who holds the lock now.
type lockState struct {
	// lease is the lease of the session that holds the lock; 0 when nobody
	// holds it.
	lease clientv3.LeaseID
	// ttl and granted are the seconds the lease has left and was granted;
	// ttl is -1 when it could not be read (ttlErr says why, when asking
	// failed).
	ttl, granted int64
	ttlErr       error
	// holder is what the holder key says, when it is on the same lease.
	holder *Holder
	// text is the holder key's value, parsed or not.
	text string
	// host is this host's name.
	host string
}

// readLockState reads the lock's owner key (the oldest under LockPrefix),
// its lease and the holder key.
func readLockState(ctx context.Context, cli *clientv3.Client) (lockState, error) {
	st := lockState{ttl: -1}
	st.host, _ = os.Hostname()
	owner, err := cli.Get(ctx, LockPrefix+"/", clientv3.WithFirstCreate()...)
	if err != nil {
		return st, fmt.Errorf("read who holds the lock: %w", err)
	}
	if len(owner.Kvs) == 0 {
		return st, nil
	}
	st.lease = clientv3.LeaseID(owner.Kvs[0].Lease)
	if ttl, err := cli.TimeToLive(ctx, st.lease); err == nil {
		st.ttl, st.granted = ttl.TTL, ttl.GrantedTTL
	} else {
		st.ttlErr = err
	}
	if resp, err := cli.Get(ctx, LockHolderKey); err == nil && len(resp.Kvs) > 0 {
		st.text = string(resp.Kvs[0].Value)
		// A holder key on another lease is not this owner's.
		if h, ok := ParseHolder(st.text); ok && clientv3.LeaseID(resp.Kvs[0].Lease) == st.lease {
			st.holder = &h
		}
	}
	return st, nil
}

// crashed says why the holder is taken to have crashed, or "" when it is
// not: a regghost of this host whose process is no longer running, or a
// lease not renewed for over half its TTL (a live holder renews it every
// third of it).
func (st lockState) crashed() string {
	if h := st.holder; h != nil && h.Host == st.host && h.PID > 0 && !processRunning(h.PID) {
		return "which is no longer running"
	}
	if st.ttl >= 0 && st.granted > 0 && st.ttl*2 < st.granted {
		return fmt.Sprintf("whose lease is about to expire (%ds of %ds left: it is no longer renewed)", st.ttl, st.granted)
	}
	return ""
}

// describe names the holder for the line that says why Lock waits.
func (st lockState) describe() string {
	if h := st.holder; h != nil {
		where := "on " + h.Host
		if h.Host == st.host {
			where = "on this host"
		}
		return fmt.Sprintf("'%s' (pid %d %s)", h.What, h.PID, where)
	}
	return fmt.Sprintf("another regghost (lease %x)", int64(st.lease))
}

// holderText is the holder for a refusal: the holder key's value as it
// is, which names command, pid, host and since when.
func (st lockState) holderText() string {
	if st.text == "" {
		return "unknown"
	}
	return st.text
}
