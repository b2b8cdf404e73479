package repair

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// LockPrefix is where writers of regghost take their etcd lock; it is
// outside any registry prefix.
const LockPrefix = "/regghost/lock"

// ErrLocked is returned (wrapped) when another regghost is writing.
var ErrLocked = errors.New("another regghost is writing to this etcd")

// Lock takes the etcd lock that purge, restore and unstick hold for their
// write phase, so two operators never write at once; the lock lives on a
// lease, so a killed regghost releases it within its TTL. what says what
// this one does, for the other's refusal. When the lock cannot be taken at
// all (etcd auth without write access to it, kine), it says so and goes on.
func Lock(ctx context.Context, cli *clientv3.Client, what string) (unlock func(), warning string, err error) {
	if ds, err := DetectDatastore(ctx, cli); err == nil && ds.Limited() {
		return func() {}, ds.Name + " has no leases to keep an etcd lock alive, so regghost's lock cannot be taken; going on without it (make sure no other operator repairs this datastore now)", nil
	}
	session, err := concurrency.NewSession(cli, concurrency.WithTTL(30), concurrency.WithContext(ctx))
	if err != nil {
		return func() {}, "the etcd lock could not be taken (" + err.Error() + "); going on without it", nil
	}
	m := concurrency.NewMutex(session, LockPrefix)
	if err := m.TryLock(ctx); err != nil {
		session.Close()
		if errors.Is(err, concurrency.ErrLocked) {
			holder := "unknown"
			if resp, gerr := cli.Get(ctx, LockPrefix+"-holder"); gerr == nil && len(resp.Kvs) > 0 {
				holder = string(resp.Kvs[0].Value)
			}
			return nil, "", fmt.Errorf("%w: %s; wait for it to finish and run again", ErrLocked, holder)
		}
		if errors.Is(err, rpctypes.ErrPermissionDenied) || errors.Is(err, rpctypes.ErrGRPCPermissionDenied) {
			return func() {}, "the etcd user may not take regghost's lock; going on without it", nil
		}
		return func() {}, "the etcd lock could not be taken (" + err.Error() + "); going on without it", nil
	}
	host, _ := os.Hostname()
	holder := fmt.Sprintf("%s (pid %d on %s, since %s)", what, os.Getpid(), host, time.Now().UTC().Format(time.RFC3339))
	_, _ = cli.Put(ctx, LockPrefix+"-holder", holder, clientv3.WithLease(session.Lease()))
	return func() {
		uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _ = cli.Delete(uctx, LockPrefix+"-holder")
		_ = m.Unlock(uctx)
		session.Close()
	}, "", nil
}
