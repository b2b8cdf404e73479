package repair

import (
	"context"
	"fmt"
	"maps"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/notice"
	"github.com/regghost/regghost/pkg/protect"
)

// Restorer puts a backup's keys back (a purge's, or a fix's), or undoes a
// recovery (a recovery's backup), through the protected write: the
// backup's cluster is compared with this one, the lock is taken, and the
// keys are judged again under it before anything is written.
type Restorer struct {
	Client *clientv3.Client
	Backup *backup.Backup
	// Path names the backup for the lock; AuditDir is where the audit log
	// goes (the backup's directory).
	Path, AuditDir string
	// Options are restore's rules (IntoRecreated, Prefix, Reader).
	Options RestoreOptions
	// OtherCluster and OtherClusterGrants write a backup of another
	// cluster, and its grants (see protect.Job).
	OtherCluster, OtherClusterGrants bool
	Notices                          notice.Func
	// planned is what the dry run (Plan) said, for the judge under the lock.
	planned []etcdwrite.Result
	Decrypt backup.Decrypter
	// Pacing sets the rate and the stop of the writes.
	Pacing etcdwrite.Pacing
}

// job is the protected write of r, doing write.
func (r *Restorer) job(action string, write func(ctx context.Context, w *protect.Writer) ([]etcdwrite.Result, error)) protect.Job {
	src := r.Backup.Of()
	keys := make([]string, len(r.Backup.Entries))
	for i, e := range r.Backup.Entries {
		keys[i] = e.Key
	}
	// This cluster's identity is read under its own prefix; the keys
	// written keep the backup's (IsGrant finds a grant under either).
	prefix := r.Options.Prefix
	if prefix == "" {
		prefix = r.Backup.Prefix
	}
	return protect.Job{Client: r.Client, Holder: "regghost " + action + " " + r.Path, Notices: r.Notices, Pacing: r.Pacing,
		Prefix: prefix, Decrypt: r.Decrypt, Source: &src, SourceKeys: keys,
		OtherCluster: r.OtherCluster, OtherClusterGrants: r.OtherClusterGrants,
		AuditDir: r.AuditDir, Action: action, Write: write}
}

// rewrittenAt fills in, for each entry regghost rewrote through the API
// server (a dangling fix, the finalizers unstick removed, a CRD migrate edited), the revision it
// left the object at, from the audit log where the write journaled it: restore writes the backed-up bytes
// back only while the object is still at that revision.
func (r *Restorer) rewrittenAt() error {
	written, err := backup.Written(r.AuditDir, backup.ActionDangling, etcdwrite.Rewritten)
	if err != nil {
		return err
	}
	unstuck, err := backup.Written(r.AuditDir, backup.ActionUnstick, etcdwrite.FinalizersRemoved)
	if err != nil {
		return err
	}
	maps.Copy(written, unstuck)
	migrated, err := backup.Written(r.AuditDir, backup.ActionMigrate, etcdwrite.Rewritten)
	if err != nil {
		return err
	}
	maps.Copy(written, migrated)
	for i, e := range r.Backup.Entries {
		if rev := written[e.Key]; rev != 0 && e.Rewritten == 0 {
			r.Backup.Entries[i].Rewritten = rev
		}
	}
	return nil
}

// Plan is the dry run: what restore would write (or undo would delete),
// after the same cluster check as the write.
func (r *Restorer) Plan(ctx context.Context) ([]etcdwrite.Result, error) {
	job := r.job("restore", nil)
	if _, err := protect.Check(ctx, job); err != nil {
		return nil, err
	}
	if err := r.rewrittenAt(); err != nil {
		return nil, err
	}
	if r.Backup.Action == backup.ActionRecover {
		plan, err := UndoRecover(ctx, r.Client, r.Backup, r.AuditDir, true, etcdwrite.Pacing{}, nil)
		r.planned = plan
		return plan, err
	}
	o := r.Options
	o.DryRun = true
	plan, err := RestoreWith(ctx, r.Client, r.Backup, o)
	r.planned = plan
	return plan, err
}

// Run writes the keys back (or deletes a recovery's), judging each again
// under the lock.
func (r *Restorer) Run(ctx context.Context) ([]etcdwrite.Result, error) {
	if err := r.rewrittenAt(); err != nil {
		return nil, err
	}
	action := "restore"
	if r.Backup.Action == backup.ActionRecover {
		action = "undo-recover"
	}
	job := r.job(action, func(ctx context.Context, w *protect.Writer) ([]etcdwrite.Result, error) {
		if r.Backup.Action == backup.ActionRecover {
			return UndoRecover(ctx, r.Client, r.Backup, r.AuditDir, false, w.Pacing, func(res etcdwrite.Result) { w.Journal(res) })
		}
		o := r.Options
		o.DryRun, o.Pacing, o.Journal = false, w.Pacing, func(res etcdwrite.Result) { w.Journal(res) }
		return RestoreWith(ctx, r.Client, r.Backup, o)
	})
	if r.planned != nil {
		// What was confirmed is judged again under the lock: a key whose
		// outcome changed since (deleted on purpose, created again) stops
		// the run before anything is written.
		confirmed := r.planned
		job.Rejudge = func(ctx context.Context) error {
			now, err := r.Plan(ctx)
			if err != nil {
				return err
			}
			return sameOutcomes(confirmed, now)
		}
	}
	// The undo of a recovery only deletes: it runs under etcd's NOSPACE
	// alarm too.
	job.DeletesOnly = r.Backup.Action == backup.ActionRecover
	out, err := protect.Run(ctx, job)
	if out == nil {
		return nil, err
	}
	return out.Results, err
}

// sameOutcomes fails when a key's planned outcome differs now.
func sameOutcomes(was, now []etcdwrite.Result) error {
	by := make(map[string]etcdwrite.Result, len(now))
	for _, r := range now {
		by[r.Key] = r
	}
	for _, r := range was {
		if n, ok := by[r.Key]; !ok || n.Outcome != r.Outcome {
			return fmt.Errorf("%w (%s: %s, now %s); run restore again to review it", ErrChanged, r.Key, r.Outcome, n.Outcome)
		}
	}
	return nil
}
