package migrate

import (
	"context"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/notice"
	"github.com/regghost/regghost/pkg/protect"
)

// Protection runs a custom resource's migration as regghost's protected
// write (pkg/protect): the writers' lock (no other regghost writes
// meanwhile), the CRD judged again under it, a verified backup of the
// CustomResourceDefinition's key as the plan read it, and every edit of the
// CRD (a version listed again, status.storedVersions narrowed, the version
// removed again) journaled with the revision it left the CRD at, so
// `regghost restore` puts the CRD back as it was while nobody changed it
// since. The objects a conversion rewrites (stored at a version other than
// the storage version: a conversion webhook or a new schema may change
// them) are backed up as etcd holds them too, and a rewrite of exactly the
// value backed up is journaled with the revision the API server left the
// object at: restore puts such an object back while nobody changed it
// since and its CRD lists the version it was stored at (for a stranded
// version, only once the CRD lists it again). One someone else wrote after
// the backup is journaled as changed, and never put back over their write. Objects only written again under
// another key are not backed up: the API server writes them back
// unchanged, and a backup of their values would keep the old key's
// ciphertext on disk. Where the storage version is not served, every
// object goes through a conversion there and back, and is backed up,
// under whatever key etcd holds it.
type Protection struct {
	Client     *clientv3.Client
	Prefix     string
	Decrypt    backup.Decrypter
	BackupRoot string
	Notices    notice.Func
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
			Keys: append([]protect.Want{{ModRevision: plan.Target.CRDRevision, Required: true, Entry: backup.Entry{Key: key,
				Reason: "CustomResourceDefinition " + crd.Name + " as regghost migrate read it"}}}, convertedWants(plan)...)},
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
			backedUp := map[string]int64{}
			if w.Backup != nil {
				for _, e := range w.Backup.Entries {
					backedUp[e.Key] = e.ModRevision
				}
			}
			o.Rewrite.Rewrote = func(out Outcome) {
				if r, ok := rewriteJournal(backedUp, out); ok {
					w.Journal(r)
				}
			}
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

// Converted are the objects of plan a rewrite converts: stored at a
// version of the resource's group other than the storage version (or at no
// version that reads), so a conversion webhook, or the storage version's
// schema, decides what is written back. A storage version not served is
// read and written through another (Target.Through): then every object
// goes through a conversion there and back.
func Converted(plan *Census) []Object {
	var out []Object
	storage := plan.Target.Resource.WithVersion(plan.Target.Version).GroupVersion().String()
	for _, o := range plan.Rewrite {
		if o.StoredAs != storage || plan.Target.Through != "" {
			out = append(out, o)
		}
	}
	return out
}

// convertedWants are the converted objects as backup keys, at the revision
// the plan read them at (one changed since is left out of the backup, and
// a client's write through the API server stored it at the storage version).
func convertedWants(plan *Census) []protect.Want {
	var out []protect.Want
	for _, o := range Converted(plan) {
		reason := "stored at " + o.StoredAs + ", converted to " + plan.Target.Version + " by the rewrite: kept as etcd holds it"
		if plan.Target.Through != "" {
			reason = "stored at " + o.StoredAs + ", converted to " + plan.Target.Through + " and back by the rewrite (" + plan.Target.Version + " is not served): kept as etcd holds it"
		}
		out = append(out, protect.Want{ModRevision: o.ModRevision, Entry: backup.Entry{Key: o.Key, Reason: reason}})
	}
	return out
}

// rewriteJournal is the audit log's line for a rewrite of a backed-up
// object (ok false: the object was not backed up): Rewritten, with the
// revision the API server left it at, only when the API server rewrote
// exactly the value backed up (read at its revision, no conflict, a new
// revision), so restore never puts the backup back over another writer's
// change; SkippedChanged otherwise.
func rewriteJournal(backedUp map[string]int64, out Outcome) (etcdwrite.Result, bool) {
	at, ok := backedUp[out.Key]
	switch {
	case !ok:
		return etcdwrite.Result{}, false
	case out.Read == at && out.Conflicts == 0 && out.Revision != at:
		return etcdwrite.Result{Key: out.Key, Outcome: etcdwrite.Rewritten, Revision: out.Revision,
			Detail: "converted from " + out.StoredAs + " by the API server"}, true
	}
	return etcdwrite.Result{Key: out.Key, Outcome: etcdwrite.SkippedChanged,
		Detail: fmt.Sprintf("written by someone else after the backup (read at revision %d, backed up at %d), or left as it was: restore leaves it alone", out.Read, at)}, true
}
