package migrate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/protect"
)

// Protection runs a custom resource's migration as regghost's protected
// write (pkg/protect): the writers' lock (no other regghost writes
// meanwhile), the CRD judged again under it, a verified backup of the
// CustomResourceDefinition's key as the plan read it, and every edit of the
// CRD (a version listed again, status.storedVersions narrowed, the version
// removed again) journaled with the revision it left the CRD at, so
// `regghost restore` puts the CRD back as it was while nobody changed it
// since. The objects' rewrites are not backed up: each writes the object
// back unchanged through the API server, and a backup of their values
// would keep the old key's ciphertext on disk.
type Protection struct {
	Client     *clientv3.Client
	Prefix     string
	Decrypt    backup.Decrypter
	BackupRoot string
	Notices    io.Writer
	Now        func() time.Time
}

// ErrNothingChanged marks a protected run refused before anything was written.
var ErrNothingChanged = protect.ErrNothingChanged

// run is Run inside protect.Run.
func (p *Protection) run(ctx context.Context, plan *Census, o Options) (*Result, error) {
	crd := plan.Target.CRD
	key := crdKey(p.Prefix, crd.Name)
	res := &Result{}
	var runErr error
	out, err := protect.Run(ctx, protect.Job{Client: p.Client, Holder: "regghost migrate " + plan.Resource, Notices: p.Notices,
		Prefix: p.Prefix, Decrypt: p.Decrypt, Action: backup.ActionMigrate, Pacing: etcdwrite.Pacing{Stop: o.Rewrite.Stop},
		Rejudge: func(ctx context.Context) error {
			now, err := o.Again(ctx)
			if err != nil {
				return err
			}
			if c := now.Target.CRD; c == nil || c.UID != crd.UID || now.Target.CRDRevision != plan.Target.CRDRevision {
				return fmt.Errorf("refused: CustomResourceDefinition %s changed since the plan was shown (revision %d, was %d): run again", crd.Name, now.Target.CRDRevision, plan.Target.CRDRevision)
			}
			return nil
		},
		Backup: &protect.Record{Root: p.BackupRoot, Scope: "migrate " + plan.Resource, Action: backup.ActionMigrate, ScanRevision: plan.Revision, Now: p.Now,
			Keys: []protect.Want{{ModRevision: plan.Target.CRDRevision, Required: true, Entry: backup.Entry{Key: key,
				Reason: "CustomResourceDefinition " + crd.Name + " as regghost migrate read it"}}}},
		Write: func(ctx context.Context, w *protect.Writer) ([]etcdwrite.Result, error) {
			var results []etcdwrite.Result
			res.edited = func(rev int64, what string) {
				r := etcdwrite.Result{Key: key, Outcome: etcdwrite.Rewritten, Revision: rev, Detail: what}
				w.Journal(r)
				results = append(results, r)
			}
			res.moved = func(detail string) {
				r := etcdwrite.Result{Key: key, Outcome: etcdwrite.SkippedChanged, Detail: detail}
				w.Journal(r)
				results = append(results, r)
			}
			res.crdRev = plan.Target.CRDRevision
			// A stop (a signal, the lock lost, an audit log that can no
			// longer be written) ends the rewrite between objects.
			o.Rewrite.Stop = w.Pacing.Stop
			_, runErr = run(ctx, plan, o, res)
			return results, nil
		}})
	if out != nil {
		res.Dir, res.Backup = out.Dir, out.Backup
	}
	if err != nil {
		if errors.Is(err, protect.ErrNothingChanged) {
			return res, err
		}
		if runErr != nil {
			return res, fmt.Errorf("%w; %w", runErr, err)
		}
		return res, err
	}
	return res, runErr
}
