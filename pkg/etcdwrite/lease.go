package etcdwrite

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// LeaseTTL reads what is left of a key's lease, in seconds, for its backup
// entry. When it cannot be read, ttl is 0 and unknown says why: a TTL of 0
// would read as "no lease", and restore would bring an expiring key (an
// Event) back for good.
func LeaseTTL(ctx context.Context, leases clientv3.Lease, lease int64) (ttl int64, unknown string) {
	if lease == 0 {
		return 0, ""
	}
	resp, err := leases.TimeToLive(ctx, clientv3.LeaseID(lease))
	switch {
	case err != nil:
		return 0, fmt.Sprintf("the TTL of lease %x could not be read: %v", lease, err)
	case resp.TTL < 0:
		// etcd answers -1 for a lease it no longer has: the key goes with it.
		return 0, fmt.Sprintf("lease %x had expired when the key was backed up", lease)
	case resp.TTL == 0:
		// Less than a second left: the smallest TTL a new lease can have.
		return 1, ""
	}
	return resp.TTL, ""
}

// KVLease is what a repair needs of etcd: keys and leases (*clientv3.Client).
type KVLease interface {
	clientv3.KV
	clientv3.Lease
}

// UnknownLeaseTTL is the TTL, in seconds, a restored key gets when its
// lease's TTL could not be read at the backup: kube-apiserver's default
// --event-ttl (1h), the TTL of the keys that have leases.
const UnknownLeaseTTL = 3600
