package reclaim

import (
	"context"
	"fmt"

	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdwrite"
)

// lockWriters takes the locks every regghost write holds, as pkg/protect
// takes them: this node's (etcdwrite.NodeLock, named after the cluster's
// identity), then etcd's. Under the NOSPACE alarm etcd refuses the etcd
// lock's lease: reclaim then goes on with this node's lock alone, once no
// regghost holds etcd's, and the warning says what that does not cover.
func lockWriters(ctx context.Context, o Options) (unlock func(), warning string, err error) {
	here, err := backup.ReadIdentity(ctx, o.Client, o.Prefix, o.Decrypt)
	if err != nil {
		return nil, "", err
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
		return nil, "", err
	}
	if nospace, _ := etcdwrite.NoSpace(ctx, o.Client); !nospace {
		etcdUnlock, err := etcdwrite.Lock(ctx, o.Client, holder, etcdwrite.WithLockNotices(o.notices()))
		if err == nil {
			return func() { etcdUnlock(); nodeUnlock() }, "", nil
		}
		if !etcdwrite.IsNoSpace(err) {
			nodeUnlock()
			return nil, "", err
		}
	}
	if err := etcdwrite.RefuseEtcdHolder(ctx, o.Client); err != nil {
		nodeUnlock()
		return nil, "", err
	}
	return nodeUnlock, fmt.Sprintf("etcd's NOSPACE alarm is raised, so etcd refuses the lease of regghost's lock: only this node's lock %s is held; it stops a second regghost on this node, not one on another node", path), nil
}
