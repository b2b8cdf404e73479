// Package repair plans and runs a purge of ghost keys (revision-guarded
// deletes, volumes set to Retain first) and the restore that puts a purge's
// keys back.
package repair

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/client-go/kubernetes"

	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/impact"
	"github.com/regghost/regghost/pkg/notice"
	"github.com/regghost/regghost/pkg/protect"
)

// PurgeOptions configure a purge.
type PurgeOptions struct {
	// BackupRoot is where the purge's backup directory is created.
	BackupRoot string
	// Client reads and deletes keys, and holds the writers' lock.
	Client *clientv3.Client
	// ClientConfig opens the snapshot stream (to its first endpoint).
	ClientConfig clientv3.Config
	// Kube changes what must change through the API server before the
	// deletes (a PV's reclaim policy); nil when it cannot be reached.
	Kube kubernetes.Interface
	// Pacing sets the batch size, the rate and the stop of the deletes;
	// the datastore's shapes are added by the protected write.
	Pacing etcdwrite.Pacing
	// Notices gets the lock's lines and warnings.
	Notices notice.Func
	// Decrypt opens an encrypted kube-system namespace (the identity).
	Decrypt backup.Decrypter
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// beforeWrite runs once the backup is verified, right before the
	// deletes (tests change the cluster there).
	beforeWrite func()
}

// PurgeResult reports a finished purge.
type PurgeResult struct {
	Dir string `json:"dir"`
	// Endpoint is the member the snapshot came from.
	Endpoint string               `json:"endpoint"`
	Backup   string               `json:"backup"`
	Snapshot *backup.SnapshotInfo `json:"snapshot"`
	Results  []etcdwrite.Result   `json:"results"`
	Deleted  int                  `json:"deleted"`
	Planned  int                  `json:"planned"`
	// Warnings are what a person must know about the run (no lock).
	Warnings []string `json:"warnings,omitempty"`
}

// Purge deletes the plan's targets through the protected write
// (protect.Run): the lock, a verified snapshot and per-key backup of every
// target at the revision the scan judged it (one changed since is left
// out), then deletes compared on that revision and on the absence of the
// keys its verdict rests on, in the same transaction, each read back. When
// anything before the deletes fails, nothing is deleted and the half-made
// backup directory is removed. With --retain-volumes each volume is set to
// Retain through the API server right before the transaction that deletes
// its claim, and only if that claim is still to be deleted then.
func Purge(ctx context.Context, plan *Plan, o PurgeOptions) (*PurgeResult, error) {
	if len(plan.Targets) == 0 {
		return nil, errors.New("nothing to purge")
	}
	if err := plan.Refusal(); err != nil {
		return nil, err
	}
	retain := plan.ImpactOptions.RetainVolumes && plan.Impact != nil && len(plan.Impact.VolumesToRetain()) > 0
	if retain && o.Kube == nil {
		return nil, fmt.Errorf("%w; nothing was changed", errNoKube)
	}
	wants := targetWants(plan)
	if retain {
		wants = append(wants, volumeWants(plan.Impact.VolumesToRetain())...)
	}
	cfg := o.ClientConfig
	res := &PurgeResult{Planned: len(plan.Targets) + len(plan.Skipped)}
	out, err := protect.Run(ctx, protect.Job{
		Client: o.Client, Holder: "regghost purge " + plan.Scope, Notices: o.Notices, Pacing: o.Pacing,
		Prefix: plan.Prefix, Decrypt: o.Decrypt, Action: "purge",
		// Setting volumes to Retain updates them; the deletes alone run
		// under etcd's NOSPACE alarm.
		DeletesOnly: !retain,
		Rejudge:     func(ctx context.Context) error { return rejudge(ctx, o.Client, plan) },
		Backup:      &protect.Record{Root: o.BackupRoot, Scope: plan.Scope, Keys: wants, ScanRevision: plan.Revision, Snapshot: &cfg, Now: o.Now},
		Write: func(ctx context.Context, w *protect.Writer) ([]etcdwrite.Result, error) {
			// Keys of a reviewed scan that were skipped count as planned:
			// they are ghosts left behind.
			w.Journal(plan.Skipped...)
			if o.beforeWrite != nil {
				o.beforeWrite()
			}
			var doomed []backup.Entry
			for _, e := range w.Backup.Entries {
				if e.Role == "" {
					doomed = append(doomed, e)
				}
			}
			// Delete exactly what the verified backup on disk holds. A
			// volume is set to Retain right before the transaction that
			// deletes the first target whose deletion would destroy its
			// storage, and only if that target is still to be deleted:
			// never for a claim left alone, and never once the deletes
			// stopped.
			var before beforeDelete
			var vols *retainer
			if retain {
				vols = newRetainer(o.Kube, o.Client, plan, doomed, func(r etcdwrite.Result) { w.Journal(r) })
				before = vols
			}
			results, err := guardedDelete(ctx, o.Client, doomed, w.Pacing, func(r etcdwrite.Result) { w.Journal(r) }, before)
			for _, r := range results {
				if r.Outcome == etcdwrite.Deleted {
					res.Deleted++
				}
			}
			if vols != nil {
				results = vols.merge(results)
			}
			return results, err
		},
	})
	if out == nil {
		return nil, err
	}
	res.Dir, res.Endpoint, res.Backup, res.Snapshot, res.Warnings = out.Dir, out.Endpoint, out.Backup, out.Snapshot, out.Warnings
	res.Results = append(append([]etcdwrite.Result{}, plan.Skipped...), out.Results...)
	return res, err
}

// targetWants are the plan's targets as keys to capture, each at the
// revision the scan judged it, with why it goes.
func targetWants(plan *Plan) []protect.Want {
	wants := make([]protect.Want, 0, len(plan.Targets))
	for _, t := range plan.Targets {
		classes := make([]string, len(t.Classes))
		for i, c := range t.Classes {
			classes[i] = string(c)
		}
		wants = append(wants, protect.Want{ModRevision: t.ModRevision, Entry: backup.Entry{Key: t.Key,
			Classes: classes, Reason: t.Reason(), Absent: t.Absent, Witnesses: t.Witnesses()}})
	}
	return wants
}

// volumeWants are the PersistentVolumes to set to Retain, as keys to
// capture; one changed since the scan stops the purge.
func volumeWants(vols []impact.Volume) []protect.Want {
	wants := make([]protect.Want, 0, len(vols))
	for _, v := range vols {
		wants = append(wants, protect.Want{ModRevision: v.ModRevision, Required: true, Entry: backup.Entry{Key: v.Key,
			Role: backup.RoleRetainedVolume, Reason: "set to reclaim policy Retain (was " + v.ReclaimPolicy + ") before its claim was deleted"}})
	}
	return wants
}

// ErrChanged is returned (wrapped) when what a purge sets in motion changed
// between the plan and the write.
var ErrChanged = errors.New("the cluster changed since the plan")

// rejudge works out again, under the lock, what deleting the plan's
// targets sets in motion, against etcd as it is now (a volume switched to
// Delete, a pod started on a node since the plan): a purge that would now
// be refused, or whose volumes to set to Retain changed, stops before
// anything is written. A plan made without PlanPurge has nothing to work
// it out with; its keys are still compared at their revision.
func rejudge(ctx context.Context, cli *clientv3.Client, plan *Plan) error {
	if plan.readers == nil || plan.Impact == nil {
		return nil
	}
	live, err := etcdscan.NewEtcdStore(ctx, cli, etcdscan.DefaultPageSize)
	if err != nil {
		return err
	}
	effects, err := impact.Analyze(ctx, live, plan.Prefix, plan.Targets, *plan.readers)
	if err != nil {
		return fmt.Errorf("work out again what the deletes set in motion: %w", err)
	}
	now := *plan
	now.SetImpact(effects, plan.ImpactOptions)
	if b := now.Blockers(); len(b) > 0 {
		if b[0].Flag == "" {
			return fmt.Errorf("%w: deleting %s is now refused (%s); run purge again to see why", ErrChanged, b[0].Keys[0], b[0].Reason)
		}
		return fmt.Errorf("%w: deleting %s now needs %s; run purge again to see why", ErrChanged, b[0].Keys[0], b[0].Flag)
	}
	was, is := volumeKeys(plan), volumeKeys(&now)
	if !slices.Equal(was, is) {
		return fmt.Errorf("%w: the volumes to set to Retain were %v, now %v; run purge again", ErrChanged, was, is)
	}
	return nil
}

// volumeKeys are the keys of the volumes a plan sets to Retain, sorted.
func volumeKeys(p *Plan) []string {
	if !p.ImpactOptions.RetainVolumes || p.Impact == nil {
		return nil
	}
	var keys []string
	for _, v := range p.Impact.VolumesToRetain() {
		keys = append(keys, v.Key)
	}
	slices.Sort(keys)
	return keys
}
