package recovery

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/decrypt"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/notice"
	"github.com/regghost/regghost/pkg/protect"
)

// RunOptions configure a recovery's write.
type RunOptions struct {
	// Client writes the keys and holds the lock.
	Client *clientv3.Client
	// Judge are the options the objects were judged with; Run judges them
	// again under the lock against a fresh read of the live etcd.
	Judge Options
	// From names the source ("snapshot s.db (revision 812)").
	From string
	// Source is the identity of the cluster the source was taken of
	// (SourceIdentity).
	Source backup.Identity
	// OtherCluster and OtherClusterGrants write a source of another
	// cluster, and its grants (see protect.Job).
	OtherCluster, OtherClusterGrants bool
	// BackupRoot is where the recovery's backup directory is made.
	BackupRoot string
	Notices    notice.Func
	Decrypt    backup.Decrypter
	// Pacing carries the stop of the writes.
	Pacing etcdwrite.Pacing
	// Served waits until a CRD just written is served (see WriteOptions).
	Served func(ctx context.Context, crd *Object) error
}

// Run writes the judged objects whose Action is Recover through the
// protected write: the source's cluster is compared with this one, the
// lock is taken, every object is judged again under it (a verdict that
// changed since the plan stops the run, nothing written), the keys it will
// create are recorded in a verified backup with this cluster's identity,
// and Write writes them in order, each outcome journaled with the revision
// it was written at (what the undo compares).
func Run(ctx context.Context, objs []*Object, o RunOptions) (*protect.Outcome, error) {
	var todo []*Object
	var keys []string
	for _, obj := range objs {
		if obj.Action == Recover {
			todo = append(todo, obj)
			keys = append(keys, obj.Key)
		}
	}
	if len(todo) == 0 {
		return nil, fmt.Errorf("nothing to recover: %w", protect.ErrNothingChanged)
	}
	src := o.Source
	rec := &protect.Record{Root: o.BackupRoot, Scope: "recover from " + o.From, Name: "recover", Action: backup.ActionRecover, Create: Entries(todo)}
	return protect.Run(ctx, protect.Job{
		Client: o.Client, Holder: "regghost recover from " + o.From, Notices: o.Notices, Pacing: o.Pacing,
		Prefix: o.Judge.Registry, Decrypt: o.Decrypt, Action: backup.ActionRecover,
		Source: &src, SourceKeys: keys, OtherCluster: o.OtherCluster, OtherClusterGrants: o.OtherClusterGrants,
		Rejudge: func(ctx context.Context) error {
			live, err := etcdscan.NewEtcdStore(ctx, o.Client, etcdscan.DefaultPageSize)
			if err != nil {
				return err
			}
			rec.ScanRevision = live.Revision()
			return Rejudge(ctx, objs, o.Judge, live)
		},
		Backup: rec,
		Write: func(ctx context.Context, w *protect.Writer) ([]etcdwrite.Result, error) {
			return Write(ctx, o.Client, objs, WriteOptions{Pacing: w.Pacing, Served: o.Served, Journal: w.Journal})
		},
	})
}

// ErrChanged is returned (wrapped) when a verdict changed between the plan
// and the write.
var ErrChanged = fmt.Errorf("the cluster changed since the plan")

// Rejudge judges objs again against live and fails when a verdict changed.
func Rejudge(ctx context.Context, objs []*Object, jo Options, live Source) error {
	was := make([]Action, len(objs))
	for i, obj := range objs {
		was[i] = obj.Action
	}
	jo.Live = live
	if err := Judge(ctx, objs, jo); err != nil {
		return err
	}
	for i, obj := range objs {
		if obj.Action != was[i] {
			return fmt.Errorf("%w (%s: %s, now %s: %s); run recover again", ErrChanged, obj.Key, was[i], obj.Action, obj.Detail)
		}
	}
	return nil
}

// SourceIdentity reads the identity of the cluster src was taken of: the
// UID of the kube-system namespace it holds, decrypted with decs when it
// is encrypted.
func SourceIdentity(ctx context.Context, src Source, registry string, decs Decoders) (backup.Identity, error) {
	key := registry + "namespaces/kube-system"
	kv, err := src.Get(ctx, key)
	if err != nil {
		return backup.Identity{}, fmt.Errorf("read %s of the source: %w", key, err)
	}
	var value []byte
	if kv != nil {
		value = kv.Value
	}
	var id backup.Identity
	id.KubeSystemUID, id.Unknown = backup.KubeSystemUID(ctx, key, value, decrypt.Namespaces(decs...))
	return id, nil
}
