package reclaim

import (
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/nodeconfig"
	"github.com/regghost/regghost/pkg/notice"
)

// DefaultQuota is etcd's quota when --quota-backend-bytes is not set.
const DefaultQuota = int64(2 << 30)

// Action names a reclaim's backup directory (it holds the snapshot taken
// before the compaction, and no key).
const Action = "reclaim"

// Options say how to reach the cluster and what is known of this node.
type Options struct {
	// Client reaches the cluster through any member.
	Client *clientv3.Client
	// Config is the client's configuration: each member is reached on its
	// own endpoint with its TLS files and credentials (Status, reads,
	// /metrics, the snapshot). Its Endpoints are those the user gave.
	Config clientv3.Config
	// DataDirs are members' data directories on this node, by member
	// name; the name "" stands for the member that runs on this node.
	DataDirs map[string]string
	// Node is the node's etcd static pod; nil when the node has none.
	Node *nodeconfig.EtcdMember
	// Quota is the quota of a member whose own cannot be read
	// (--quota-backend-bytes); QuotaGiven says it was given, not defaulted.
	Quota      int64
	QuotaGiven bool
	// BackupRoot is where the snapshot's directory is made.
	BackupRoot string
	// CheckTimeout bounds each health check of a member (default 5s).
	CheckTimeout time.Duration
	// MemberWait is how long a defragmented member has to come back
	// healthy before Run stops (default 1m).
	MemberWait time.Duration
	// Now names the backup directory (default time.Now).
	Now func() time.Time
	// Progress, when set, is told each step as it happens.
	Progress func(Step)
	// Prefix and Decrypt read the cluster's identity (its etcd cluster ID
	// and kube-system UID), which names this node's writers' lock.
	Prefix  string
	Decrypt backup.Decrypter
	// Holder names the run in the locks ("regghost space reclaim").
	Holder string
	// Notices receives the lock's wait and warning lines; nil drops them.
	Notices notice.Func
	// Warned are the plan's warnings (Plan.Warnings) the person was shown
	// before confirming: Run keeps what they announced in its result but
	// does not say it on Notices again.
	Warned []string
}

func (o *Options) checkTimeout() time.Duration {
	if o.CheckTimeout > 0 {
		return o.CheckTimeout
	}
	return 5 * time.Second
}

func (o *Options) memberWait() time.Duration {
	if o.MemberWait > 0 {
		return o.MemberWait
	}
	return time.Minute
}

func (o *Options) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

func (o *Options) quota() int64 {
	if o.Quota != 0 {
		return o.Quota
	}
	return DefaultQuota
}

func (o *Options) progress(s Step) {
	if o.Progress != nil {
		o.Progress(s)
	}
}
