// Package repair plans and runs a purge of ghost keys (revision-guarded
// deletes, volumes set to Retain first) and the restore that puts a purge's
// keys back.
package repair

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/sys/unix"
	"k8s.io/client-go/kubernetes"

	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/impact"
	"github.com/regghost/regghost/pkg/snapshot"
)

// PurgeOptions configure a purge.
type PurgeOptions struct {
	// BackupRoot is where the purge's backup directory is created.
	BackupRoot string
	// Client reads and deletes keys.
	Client *clientv3.Client
	// ClientConfig opens the snapshot stream (to its first endpoint).
	ClientConfig clientv3.Config
	// Kube changes what must change through the API server before the
	// deletes (a PV's reclaim policy); nil when it cannot be reached.
	Kube   kubernetes.Interface
	Pacing etcdwrite.Pacing
	// Lock, when set, is taken once the snapshot and backup are verified,
	// before the first write, and released when the purge is done; a purge
	// refused before that writes nothing to etcd, not even a lock.
	Lock func(ctx context.Context) (unlock func(), err error)
	// Now is the clock (time.Now when nil).
	Now func() time.Time
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
}

// Purge deletes the plan's targets. Before the first delete it writes and
// verifies a full snapshot and a per-key backup; when anything before the
// deletes fails, nothing is deleted and the half-made backup directory is
// removed. With --retain-volumes each volume is set to Retain through the
// API server right before the transaction that deletes its claim, and only
// if that claim is still to be deleted then.
func Purge(ctx context.Context, plan *Plan, o PurgeOptions) (*PurgeResult, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if len(plan.Targets) == 0 {
		return nil, errors.New("nothing to purge")
	}
	if err := plan.Refusal(); err != nil {
		return nil, err
	}
	retain := plan.ImpactOptions.RetainVolumes && plan.Impact != nil && len(plan.Impact.VolumesToRetain()) > 0
	if retain && o.Kube == nil {
		return nil, fmt.Errorf("%w; nothing was deleted", errNoKube)
	}
	dir, err := backup.NewBackupDir(o.BackupRoot, plan.Scope, o.Now())
	if err != nil {
		return nil, err
	}
	ds, err := etcdwrite.DetectDatastore(ctx, o.Client)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("no etcd endpoint answers: %w; nothing was deleted", err)
	}
	o.Pacing = ds.Pacing(o.Pacing)
	res, b, err := prepare(ctx, plan, o, ds, dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("%w; nothing was deleted", err)
	}
	if o.Lock != nil {
		unlock, err := o.Lock(ctx)
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("%w; nothing was deleted", err)
		}
		defer unlock()
	}
	all := append(append([]etcdwrite.Result{}, plan.Skipped...), res.Results...)
	var doomed []backup.Entry
	for _, e := range b.Entries {
		if e.Role == "" {
			doomed = append(doomed, e)
		}
	}
	// The audit log is written as the purge goes: what happened before the
	// deletes, then a line per key as its transaction returns, so a purge
	// killed half-way leaves a trail.
	if err := backup.AppendAudit(dir, "purge", all); err != nil {
		res.Results = all
		return res, fmt.Errorf("%w; nothing was deleted", err)
	}
	var journalErr error
	journal := func(r etcdwrite.Result) {
		if err := backup.AppendAudit(dir, "purge", []etcdwrite.Result{r}); err != nil && journalErr == nil {
			journalErr = err
		}
	}
	// Delete exactly what the verified backup on disk holds. A volume is set
	// to Retain right before the transaction that deletes the first target
	// whose deletion would destroy its storage, and only if that target is
	// still to be deleted: never for a claim left alone, and never once the
	// deletes stopped.
	var before beforeDelete
	var vols *retainer
	if retain {
		vols = newRetainer(o.Kube, o.Client, plan, doomed, journal)
		before = vols
	}
	results, err := guardedDelete(ctx, o.Client, doomed, o.Pacing, journal, before)
	for _, r := range results {
		if r.Outcome == etcdwrite.Deleted {
			res.Deleted++
		}
	}
	if vols != nil {
		results = vols.merge(results)
	}
	all = append(all, results...)
	if err == nil {
		err = journalErr
	}
	res.Results = all
	return res, err
}

// prepare writes the snapshot and backup and returns the result so far (with
// the keys skipped before the snapshot) and the backup as read back from disk.
func prepare(ctx context.Context, plan *Plan, o PurgeOptions, ds etcdwrite.Datastore, dir string) (*PurgeResult, *backup.Backup, error) {
	// Keys of a reviewed scan that were skipped count as planned: they are
	// ghosts left behind.
	res := &PurgeResult{Dir: dir, Planned: len(plan.Targets) + len(plan.Skipped)}
	entries, skipped, err := readEntries(ctx, o.Client, plan, ds)
	if err != nil {
		return nil, nil, err
	}
	res.Results = skipped
	if len(entries) == 0 {
		return nil, nil, errors.New("every planned key changed since the scan")
	}
	if plan.ImpactOptions.RetainVolumes && plan.Impact != nil {
		vols, err := readVolumes(ctx, o.Client, plan.Impact.VolumesToRetain())
		if err != nil {
			return nil, nil, err
		}
		entries = append(entries, vols...)
	}
	if err := checkSpace(ctx, o.Client, ds, dir, entries); err != nil {
		return nil, nil, err
	}
	file := snapshot.SnapshotFile
	if ds.Limited() {
		file = snapshot.LogicalSnapshotFile
	}
	snap, ep, err := snapshot.TakeSnapshot(ctx, o.Client, o.ClientConfig, filepath.Join(dir, file), plan.Revision)
	if err != nil {
		return nil, nil, err
	}
	res.Endpoint = ep
	if err := snapshot.SnapshotHolds(snap.Path, entries); err != nil {
		return nil, nil, err
	}
	res.Snapshot = snap
	// Every member of a cluster answers with its cluster ID: the one the
	// datastore was detected with is the snapshot member's too.
	var written *backup.Backup
	res.Backup, written, err = backup.WriteBackup(dir, &backup.Backup{
		Created: o.Now().UTC(), Scope: plan.Scope, Prefix: plan.Prefix, Endpoint: ep, ClusterID: ds.ClusterID,
		ScanRevision: plan.Revision, Snapshot: snap, Entries: entries,
	})
	if err != nil {
		return nil, nil, err
	}
	return res, written, nil
}

// readEntries reads each target's current key-value; keys changed or gone
// since the scan are skipped.
func readEntries(ctx context.Context, kv etcdwrite.KVLease, plan *Plan, ds etcdwrite.Datastore) ([]backup.Entry, []etcdwrite.Result, error) {
	var entries []backup.Entry
	var skipped []etcdwrite.Result
	for _, t := range plan.Targets {
		resp, err := kv.Get(ctx, t.Key)
		if err != nil {
			return nil, nil, fmt.Errorf("read %s: %w", t.Key, err)
		}
		if len(resp.Kvs) == 0 {
			skipped = append(skipped, etcdwrite.Result{Key: t.Key, Outcome: etcdwrite.SkippedGone, Detail: "deleted by someone else since the scan"})
			continue
		}
		cur := resp.Kvs[0]
		if cur.ModRevision != t.ModRevision {
			skipped = append(skipped, etcdwrite.Result{Key: t.Key, Outcome: etcdwrite.SkippedChanged,
				Detail: fmt.Sprintf("changed since the scan (mod revision %d, now %d); left alone", t.ModRevision, cur.ModRevision)})
			continue
		}
		classes := make([]string, len(t.Classes))
		for i, c := range t.Classes {
			classes[i] = string(c)
		}
		e := backup.Entry{Key: t.Key, Value: cur.Value, CreateRevision: cur.CreateRevision, ModRevision: cur.ModRevision,
			Version: cur.Version, Lease: cur.Lease, Classes: classes, Reason: t.Reason(), Absent: t.Absent, Witnesses: t.Witnesses()}
		switch {
		case cur.Lease != 0 && ds.Limited():
			// kine has no lease API: a key's lease is its TTL in seconds.
			e.LeaseTTL = cur.Lease
		case cur.Lease != 0:
			e.LeaseTTL, e.LeaseTTLUnknown = etcdwrite.LeaseTTL(ctx, kv, cur.Lease)
		}
		entries = append(entries, e)
	}
	return entries, skipped, nil
}

// readVolumes reads the PersistentVolumes to set to Retain, as backup
// entries; one changed since the scan stops the purge.
func readVolumes(ctx context.Context, kv clientv3.KV, vols []impact.Volume) ([]backup.Entry, error) {
	var out []backup.Entry
	for _, v := range vols {
		resp, err := kv.Get(ctx, v.Key)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", v.Key, err)
		}
		if len(resp.Kvs) == 0 || resp.Kvs[0].ModRevision != v.ModRevision {
			return nil, fmt.Errorf("PersistentVolume %s changed since the scan; scan again", v.Name)
		}
		cur := resp.Kvs[0]
		out = append(out, backup.Entry{Key: v.Key, Value: cur.Value, CreateRevision: cur.CreateRevision, ModRevision: cur.ModRevision,
			Version: cur.Version, Lease: cur.Lease, Role: backup.RoleRetainedVolume,
			Reason: "set to reclaim policy Retain (was " + v.ReclaimPolicy + ") before its claim was deleted"})
	}
	return out, nil
}

// checkSpace refuses a purge whose snapshot and backup would not fit in dir.
func checkSpace(ctx context.Context, cli *clientv3.Client, ds etcdwrite.Datastore, dir string, entries []backup.Entry) error {
	var size int64
	var errs []error
	for _, ep := range cli.Endpoints() {
		status, err := cli.Status(ctx, ep)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		size = max(size, status.DbSize)
	}
	if size == 0 && len(errs) > 0 {
		return fmt.Errorf("read etcd database size: %w", errors.Join(errs...))
	}
	need := size + 4096
	if ds.Limited() {
		// A logical snapshot is base64 in JSON: up to about twice the database.
		need += size
	}
	for _, e := range entries {
		need += int64(len(e.Key)) + int64(len(e.Value))*4/3 + 512
	}
	need += need / 10
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return fmt.Errorf("free space of %s: %w", dir, err)
	}
	if free := int64(st.Bavail) * int64(st.Bsize); free < need {
		return fmt.Errorf("not enough free space in %s for the snapshot and backup: need %d bytes, %d free", dir, need, free)
	}
	return nil
}
