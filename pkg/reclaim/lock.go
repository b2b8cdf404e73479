package reclaim

import (
	"context"
	"fmt"
	"sync"

	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdwrite"
)

// noSpaceWarning is what the plan warns of under NOSPACE, before the
// question: etcd refuses the etcd lock's lease, so only this node's lock
// will be held.
const noSpaceWarning = "etcd's NOSPACE alarm is raised, so etcd refuses the lease of regghost's lock: only this node's lock will be held; " +
	"it stops a second regghost on this node, not one on another node: make sure nobody writes with regghost from another node until reclaim is done"

// writersLock is what lockWriters took.
type writersLock struct {
	unlock func()
	// warning says what the locks held do not cover: this node's lock
	// alone under NOSPACE; "" when etcd's lock is held too.
	warning string
	// lost is closed when etcd's lock is lost while held (its lease
	// expired); nil when only this node's lock is held, which a running
	// process does not lose.
	lost <-chan struct{}
}

// lockWriters takes the locks every regghost write holds, as pkg/protect
// takes them: this node's (etcdwrite.NodeLock, named after the cluster's
// identity), then etcd's. Under the NOSPACE alarm etcd refuses the etcd
// lock's lease: reclaim then goes on with this node's lock alone, once no
// regghost holds etcd's, and the warning says what that does not cover.
//
// etcd's lock lives on a lease of etcdwrite.LockTTL seconds that its
// session renews. A defragmentation stalls those renewals while it runs
// when they reach the member being rewritten, and the leader's stalls them
// whichever member they reach (every renewal is the leader's to grant, and
// its lessor waits behind the rewrite for any lease granted meanwhile), so
// a rewrite longer than the TTL can end the lease. No endpoint keeps it
// alive then: lost closes, and Run stops before its next write (see
// lockLost).
func lockWriters(ctx context.Context, o Options) (*writersLock, error) {
	here, err := backup.ReadIdentity(ctx, o.Client, o.Prefix, o.Decrypt)
	if err != nil {
		return nil, err
	}
	// The etcd cluster ID alone names the node's lock: every command
	// reads it the same way (the kube-system UID depends on the prefix and
	// the encryption config a command was given). kine has none.
	cluster := here.ClusterID
	if cluster == "" {
		cluster = here.KubeSystemUID
	}
	holder := o.Holder
	if holder == "" {
		holder = "regghost space reclaim"
	}
	nodeUnlock, path, err := etcdwrite.NodeLock(cluster, holder)
	if err != nil {
		return nil, err
	}
	if nospace, _ := etcdwrite.NoSpace(ctx, o.Client); !nospace {
		lost := make(chan struct{})
		onLost := sync.OnceFunc(func() { close(lost) })
		etcdUnlock, err := etcdwrite.Lock(ctx, o.Client, holder, etcdwrite.WithLockNotices(o.Notices), etcdwrite.WithOnLost(onLost))
		if err == nil {
			return &writersLock{unlock: func() { etcdUnlock(); nodeUnlock() }, lost: lost}, nil
		}
		if !etcdwrite.IsNoSpace(err) {
			nodeUnlock()
			return nil, err
		}
	}
	if err := etcdwrite.RefuseEtcdHolder(ctx, o.Client); err != nil {
		nodeUnlock()
		return nil, err
	}
	return &writersLock{unlock: nodeUnlock, warning: fmt.Sprintf("etcd's NOSPACE alarm is raised, so etcd refuses the lease of regghost's lock: only this node's lock %s is held; it stops a second regghost on this node, not one on another node", path)}, nil
}

// lockLost says why Run stops when etcd's lock was lost: another regghost
// may take it and write. "" while it is held, or when only this node's
// lock is held (lost is nil).
func lockLost(lost <-chan struct{}) string {
	select {
	case <-lost:
		return fmt.Sprintf("regghost's etcd lock was lost: its lease (%ds) was not renewed in time, as happens when a defragmentation outlasts it "+
			"(a member being rewritten holds back the renewals it serves, the leader all of them), or etcd was unreachable or regghost paused that long; "+
			"another regghost may be writing now, so reclaim does nothing more: run it again once no other regghost writes", etcdwrite.LockTTL)
	default:
		return ""
	}
}
