package reclaim

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/snapshot"
)

// ErrRefused means Run did not start: the plan says why.
var ErrRefused = errors.New("refused")

// Run surveys the cluster again and, unless the plan refuses, takes a
// verified snapshot, compacts at its revision, defragments each member and
// disarms NOSPACE (see the package doc). It returns what it did, with an
// error when it refused, stopped or failed; the result is nil only when
// the survey failed.
func Run(ctx context.Context, o Options) (*Result, error) {
	plan, err := Survey(ctx, o)
	if err != nil {
		return nil, err
	}
	res := &Result{Plan: plan, Members: []MemberResult{}}
	if len(plan.Refusals) > 0 {
		return res, fmt.Errorf("%w: %s; nothing was changed", ErrRefused, strings.Join(plan.Refusals, "; "))
	}
	lock, err := lockWriters(ctx, o)
	if err != nil {
		return res, fmt.Errorf("%w; nothing was changed", err)
	}
	defer lock.unlock()
	if lock.warning != "" {
		res.Warnings = append(res.Warnings, lock.warning)
		// The plan shown before the question announced it already.
		if !slices.Contains(o.Warned, noSpaceWarning) {
			o.Notices.Warn(lock.warning)
		}
	}
	if err := takeSnapshot(ctx, o, res); err != nil {
		return res, fmt.Errorf("%w; nothing was compacted or defragmented", err)
	}
	if why := lockLost(lock.lost); why != "" {
		return res, fmt.Errorf("%s; nothing was compacted or defragmented (the snapshot %s is kept)", why, res.Snapshot.Path)
	}
	if err := compact(ctx, o, res); err != nil {
		return res, fmt.Errorf("%w; nothing was defragmented (the snapshot %s is kept)", err, res.Snapshot.Path)
	}
	if err := defragmentAll(ctx, o, res, lock.lost); err != nil {
		return res, err
	}
	err = disarm(ctx, o, res, lock.lost)
	if why := lockLost(lock.lost); why != "" && err == nil {
		// Lost during the last defragmentation (the leader's, which holds
		// back every renewal), with nothing left to write after it: the
		// run is done, but the lock did not hold to its end.
		w := fmt.Sprintf("regghost's etcd lock was lost before reclaim ended (its lease of %ds was not renewed in time: a defragmentation outlasted it, or etcd was unreachable): "+
			"every member was defragmented, but another regghost may have written meanwhile", etcdwrite.LockTTL)
		res.Warnings = append(res.Warnings, w)
		o.Notices.Warn(w)
	}
	return res, err
}

// takeSnapshot saves a verified snapshot into a new backup directory from
// a healthy member, with a backup file beside it naming it (no keys), so
// that `regghost backup ls` lists it.
func takeSnapshot(ctx context.Context, o Options, res *Result) error {
	if s := planSnapshot(o.BackupRoot, res.Plan.Members); !s.Fits {
		return errors.New("the snapshot does not fit: " + s.Why)
	}
	dir, err := backup.NewBackupDir(o.BackupRoot, Action, o.now())
	if err != nil {
		return err
	}
	cfg := o.Config
	cfg.Endpoints = nil
	for _, m := range res.Plan.Members {
		if m.Healthy && !m.Learner {
			cfg.Endpoints = append(cfg.Endpoints, m.Endpoint)
		}
	}
	info, ep, err := snapshot.TakeSnapshot(ctx, o.Client, cfg, filepath.Join(dir, snapshot.SnapshotFile), 0)
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	res.Dir, res.Snapshot, res.SnapshotEndpoint = dir, info, ep
	_, _, err = backup.WriteBackup(dir, &backup.Backup{Created: o.now().UTC(), Scope: fmt.Sprintf("reclaim: the keyspace before its compaction at revision %d", info.Revision),
		Action: Action, Endpoint: ep, ClusterID: res.Plan.Datastore.ClusterID, ScanRevision: info.Revision, Snapshot: info})
	if err != nil {
		return err
	}
	o.progress(Step{Kind: StepSnapshot, Result: res})
	return nil
}

// compact compacts the keyspace at the snapshot's revision and waits until
// the compaction is applied (physical). Every revision before it is in the
// snapshot; those after it stay in etcd.
func compact(ctx context.Context, o Options, res *Result) error {
	rev := res.Snapshot.Revision
	res.Compaction = &Compaction{Revision: rev}
	_, err := o.Client.Compact(ctx, rev, clientv3.WithCompactPhysical())
	switch {
	case errors.Is(err, rpctypes.ErrCompacted):
		res.Compaction.Already = true
	case err != nil:
		res.Compaction = nil
		return fmt.Errorf("compact at revision %d: %w", rev, err)
	}
	o.progress(Step{Kind: StepCompacted, Result: res})
	return nil
}
