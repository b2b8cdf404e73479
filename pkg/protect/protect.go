// Package protect is the one protected write: every regghost command that
// changes a cluster (purge, restore, recover and its undo, dangling,
// unstick) runs its writes through Run, which does the safety protocol in
// one order, once:
//
//  1. read this cluster's identity, and refuse a source from another
//     cluster (a backup, a snapshot, an older revision) unless the caller
//     says it is a deliberate migration, and even then refuse grants
//     (bindings, webhooks, APIServices) without their own accept;
//  2. take the writers' lock: refused when another regghost writes, and
//     when the lock cannot be taken, except where the datastore cannot hold
//     one at all (kine), which is said; under etcd's NOSPACE alarm (etcd
//     refuses the lock's lease) a job that only deletes takes a lock of
//     this node instead, which is said, and a job that puts is refused;
//  3. judge the plan again under the lock, and stop when a verdict changed;
//  4. capture every key the write touches at its revision (with lease TTLs),
//     with the cluster's identity, into a backup that is verified as read
//     back from disk (and a verified snapshot first, where asked for);
//  5. write, with the shapes the datastore serves (Writer.Pacing), every
//     judged condition compared in the same transaction, each outcome
//     journaled to the audit log as it returns, and every key read back.
//
// Anything that fails before the first write removes the half-made backup
// directory and says that nothing was changed.
package protect

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/snapshot"

	"github.com/regghost/regghost/pkg/notice"
)

// Job is one command's protected write.
type Job struct {
	// Client reads, captures and writes keys, and holds the lock.
	Client *clientv3.Client
	// Holder names the command for the lock ("regghost purge namespace x").
	Holder string
	// Notices gets the lines a person should read: a lock waited for, a
	// lock that cannot be held, a warning (nil: said nowhere).
	Notices notice.Func
	// Pacing sets the batch size, rate and stop of the writes; Run adds
	// the shapes the datastore serves.
	Pacing etcdwrite.Pacing
	// Prefix is the registry prefix (for the identity and the backup).
	Prefix string
	// Decrypt opens an encrypted kube-system namespace; nil without a key.
	Decrypt backup.Decrypter

	// Source is the identity of what comes from elsewhere (a backup, a
	// snapshot, an older revision); nil when nothing does.
	Source *backup.Identity
	// SourceKeys are the keys the job writes from that source, for the
	// grants rule.
	SourceKeys []string
	// OtherCluster writes a Source of another cluster (a deliberate
	// migration); OtherClusterGrants also writes its grants.
	OtherCluster, OtherClusterGrants bool

	// Rejudge judges the plan again under the lock, against the cluster as
	// it is now; an error (a verdict that changed) stops the run before
	// anything is recorded or written.
	Rejudge func(ctx context.Context) error

	// Backup, when set, is the new backup directory the job records into
	// before it writes. Without it, the job writes keys recorded elsewhere
	// (a restore of a backup) and journals to AuditDir.
	Backup *Record
	// AuditDir is where the audit log goes without a new backup directory.
	AuditDir string
	// Action names the job in the audit log ("purge", "restore").
	Action string

	// DeletesOnly says every write of the job deletes (no put, no update
	// through the API server): such a job runs under etcd's NOSPACE alarm,
	// which refuses puts and still serves deletes; any other is refused
	// there before anything is recorded.
	DeletesOnly bool

	// Write sends the guarded writes and returns an outcome for every key.
	Write func(ctx context.Context, w *Writer) ([]etcdwrite.Result, error)

	// lost is called when the etcd lock is lost while held.
	lost func()
}

// Record says what goes into a new backup directory.
type Record struct {
	// Root is where the directory is made; Scope names the backup, and the
	// directory too unless Name does (a short one: a scope may name a file).
	Root, Scope, Name string
	// Action is the backup's action (backup.ActionRecover; "" for a purge).
	Action string
	// Keys are the keys the write changes, read at their revision: one gone
	// or changed since the plan is left out with its outcome (Writer.Skipped).
	Keys []Want
	// Create are the keys the write creates, recorded as they will be
	// written (a recovery).
	Create []backup.Entry
	// ScanRevision is the revision the plan was judged at.
	ScanRevision int64
	// Snapshot takes a verified full snapshot first (purge), no older than
	// ScanRevision, from the endpoints of this configuration.
	Snapshot *clientv3.Config
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Want is a key to capture before the write.
type Want struct {
	// Entry is what to record besides what etcd holds (classes, reason,
	// witnesses, role); its Key names the key.
	Entry backup.Entry
	// ModRevision is the revision the plan judged the key at; 0 takes the
	// key at whatever revision it has.
	ModRevision int64
	// Required stops the run when the key is gone or changed (a volume to
	// set to Retain), where others are skipped.
	Required bool
}

// Writer is what the write phase gets from Run.
type Writer struct {
	// Datastore is the server written to.
	Datastore etcdwrite.Datastore
	// Identity is this cluster's.
	Identity backup.Identity
	// Pacing is Job.Pacing with the transaction shapes the datastore serves.
	Pacing etcdwrite.Pacing
	// Dir is the backup directory (Job.AuditDir without a new one).
	Dir string
	// Backup is the backup as read back from disk; nil without a new one.
	Backup *backup.Backup
	// Skipped are the keys left out of the capture (gone or changed).
	Skipped []etcdwrite.Result

	mu         sync.Mutex
	action     string
	journalErr error
	// said is the last outcome journaled for each key.
	said map[string]etcdwrite.Result
	// halt stops the writes between transactions (Pacing.Stop).
	halt func()
}

// Journal appends outcomes to the audit log as they happen, so a run
// killed half-way leaves a trail; an outcome already journaled as it is
// is not written again. The first error is kept for Run.
func (w *Writer) Journal(rs ...etcdwrite.Result) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.said == nil {
		w.said = map[string]etcdwrite.Result{}
	}
	var fresh []etcdwrite.Result
	for _, r := range rs {
		if last, ok := w.said[r.Key]; ok && last == r {
			continue
		}
		w.said[r.Key] = r
		fresh = append(fresh, r)
	}
	if len(fresh) == 0 {
		return
	}
	if err := backup.AppendAudit(w.Dir, w.action, fresh); err != nil && w.journalErr == nil {
		// A write that cannot be recorded could not be undone: the writes
		// stop between transactions.
		w.journalErr = fmt.Errorf("%w; the writes stopped, since what they do could no longer be recorded", err)
		if w.halt != nil {
			w.halt()
		}
	}
}

// Outcome is what Run did.
type Outcome struct {
	// Dir is the backup directory (or the audit directory); Backup the
	// backup file in it, empty without a new one.
	Dir    string `json:"dir"`
	Backup string `json:"backup,omitempty"`
	// Endpoint is the member the snapshot came from.
	Endpoint string               `json:"endpoint,omitempty"`
	Snapshot *backup.SnapshotInfo `json:"snapshot,omitempty"`
	// Results has an outcome for every key: the ones left out of the
	// capture, then the write's.
	Results []etcdwrite.Result `json:"results"`
	// Warnings are what a person must know about the run (no lock).
	Warnings []string `json:"warnings,omitempty"`
}

// ErrNothingChanged marks (wraps) an error returned before the first write.
var ErrNothingChanged = errors.New("nothing was changed")

// unchanged wraps err as returned before the first write.
func unchanged(err error) error {
	if errors.Is(err, ErrNothingChanged) {
		return err
	}
	return fmt.Errorf("%w; %w", err, ErrNothingChanged)
}

// Run does the job's write in the protected order (see the package doc).
// An error wrapping ErrNothingChanged was returned before anything was
// written; any other comes with the outcome of every key.
func Run(ctx context.Context, job Job) (*Outcome, error) {
	ds, err := etcdwrite.DetectDatastore(ctx, job.Client)
	if err != nil {
		return nil, unchanged(fmt.Errorf("no etcd endpoint answers: %w", err))
	}
	here, err := Check(ctx, job)
	if err != nil {
		return nil, err
	}
	if err := preflight(ctx, job, ds); err != nil {
		return nil, unchanged(err)
	}
	out := &Outcome{}
	lost := make(chan struct{})
	var lostOnce sync.Once
	job.lost = func() { lostOnce.Do(func() { close(lost) }) }
	unlock, warning, nospace, err := lock(ctx, job, ds, here)
	if err != nil {
		return nil, unchanged(err)
	}
	defer unlock()
	out.warn(job, warning)
	if job.Rejudge != nil {
		if err := job.Rejudge(ctx); err != nil {
			return nil, unchanged(err)
		}
	}
	w := &Writer{Datastore: ds, Identity: here, Pacing: ds.Pacing(job.Pacing), action: job.Action}
	var done func()
	w.Pacing.Stop, w.halt, done = stopOrHalt(job.Pacing.Stop, lost)
	defer done()
	if job.Backup == nil {
		w.Dir = job.AuditDir
		if w.Dir != "" {
			if err := backup.CheckAudit(w.Dir); err != nil {
				return nil, unchanged(fmt.Errorf("%w: what the write does could not be recorded", err))
			}
		}
	} else {
		if err := record(ctx, job, ds, here, w, out); err != nil {
			// Only the directory record made is removed.
			if w.Dir != "" {
				os.RemoveAll(w.Dir)
			}
			return nil, unchanged(err)
		}
	}
	out.Dir = w.Dir
	if w.Dir == "" {
		return nil, unchanged(errors.New("no backup or audit directory for the write"))
	}
	if len(w.Skipped) > 0 {
		w.Journal(w.Skipped...)
	}
	results, err := job.Write(ctx, w)
	out.Results = append(append([]etcdwrite.Result{}, w.Skipped...), results...)
	if len(results) > 0 {
		w.Journal(results...)
	}
	if err == nil {
		err = w.journalErr
	}
	select {
	case <-lost:
		if err == nil {
			err = errors.New("regghost's etcd lock was lost while writing (its lease expired: etcd unreachable, or regghost paused, for over its TTL), so the writes stopped; see what was done above and run again")
		}
	default:
	}
	if nospace {
		out.warn(job, "etcd's NOSPACE alarm is still raised: what was deleted is free only once etcd is compacted and defragmented, and etcd refuses writes until the alarm is disarmed; 'regghost space' shows what fills it, 'regghost space reclaim' compacts, defragments and disarms (a dry run first)")
	}
	return out, err
}

// warn keeps a warning in the outcome and says it.
func (out *Outcome) warn(job Job, warning string) {
	if warning == "" {
		return
	}
	out.Warnings = append(out.Warnings, warning)
	job.Notices.Warn(warning)
}

// refuseNoSpace is the refusal of a job that puts under the alarm.
func refuseNoSpace() error {
	return fmt.Errorf("%w: etcd refuses every put until space is reclaimed, and this write puts keys; free space first ('regghost space' shows what fills it; 'regghost purge' deletes ghosts under the alarm; 'regghost space reclaim' compacts, defragments and disarms)", etcdwrite.ErrNoSpace)
}

// checkSource refuses what comes from another cluster (see Job.Source).
func checkSource(job Job, here backup.Identity) error {
	if job.Source == nil {
		return nil
	}
	err := backup.SameCluster(*job.Source, here)
	if err == nil {
		return nil
	}
	if !job.OtherCluster {
		if errors.Is(err, backup.ErrUnknownCluster) {
			return fmt.Errorf("%w (an encrypted kube-system opens with --encryption-provider-config; %s writes it anyway when you know where it comes from)", err, OtherClusterFlag)
		}
		return fmt.Errorf("%w (%s writes it anyway, for a deliberate migration)", err, OtherClusterFlag)
	}
	if job.OtherClusterGrants {
		return nil
	}
	for _, k := range job.SourceKeys {
		if backup.IsGrant(job.Prefix, k) {
			return fmt.Errorf("%w, and %s grants power here (a role, binding, webhook or APIService); %s writes another cluster's grants too", err, k, OtherClusterGrantsFlag)
		}
	}
	return nil
}

// OtherClusterFlag writes what came from another cluster.
const OtherClusterFlag = "--other-cluster"

// OtherClusterGrantsFlag writes another cluster's grants too.
const OtherClusterGrantsFlag = "--other-cluster-grants"

// lock takes the writers' locks: this node's (etcdwrite.NodeLock), then
// etcd's. Either is refused when another regghost holds it, and whenever
// it cannot be taken, except where etcd cannot hold its lock: kine has no
// leases, and under etcd's NOSPACE alarm etcd refuses the lease, when only
// a job that deletes goes on, on this node's lock alone, after checking no
// regghost holds etcd's; the warning says what that does not cover.
// nospace says the alarm is raised.
func lock(ctx context.Context, job Job, ds etcdwrite.Datastore, here backup.Identity) (unlock func(), warning string, nospace bool, err error) {
	// The etcd cluster ID alone names the node's lock: every command
	// reads it the same way (the kube-system UID depends on the prefix and
	// the encryption config a command was given); kine has none.
	cluster := here.ClusterID
	if cluster == "" || cluster == "0" || ds.Limited() {
		// kine says no cluster ID of its own.
		cluster = here.KubeSystemUID
	}
	// An etcd user that may not list alarms (etcd auth) is told by the
	// etcd lock's refused lease instead.
	if !ds.Limited() {
		nospace, _ = etcdwrite.NoSpace(ctx, job.Client)
		if nospace && !job.DeletesOnly {
			return nil, "", true, refuseNoSpace()
		}
	}
	nodeUnlock, path, err := etcdwrite.NodeLock(cluster, job.Holder)
	if err != nil {
		return nil, "", nospace, err
	}
	if ds.Limited() {
		return nodeUnlock, ds.Name + " has no leases to keep regghost's lock alive, so only this node's lock " + path + " is held: it stops a second regghost on this node, not an operator on another server of this datastore", false, nil
	}
	if !nospace {
		etcdUnlock, err := etcdwrite.Lock(ctx, job.Client, job.Holder, etcdwrite.WithLockNotices(job.Notices), etcdwrite.WithOnLost(job.lost))
		if err == nil {
			return func() { etcdUnlock(); nodeUnlock() }, "", false, nil
		}
		if !etcdwrite.IsNoSpace(err) {
			nodeUnlock()
			return nil, "", false, err
		}
		nospace = true
		if !job.DeletesOnly {
			nodeUnlock()
			return nil, "", true, refuseNoSpace()
		}
	}
	if err := etcdwrite.RefuseEtcdHolder(ctx, job.Client); err != nil {
		nodeUnlock()
		return nil, "", true, err
	}
	return nodeUnlock, "etcd's NOSPACE alarm is raised, so etcd refuses the lease of regghost's lock: only this node's lock " + path + " is held; it stops a second regghost on this node, not one on another node", true, nil
}

// record captures what the job changes into a new, verified backup
// directory (with a verified snapshot first when asked).
func record(ctx context.Context, job Job, ds etcdwrite.Datastore, here backup.Identity, w *Writer, out *Outcome) error {
	r := job.Backup
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	name := r.Name
	if name == "" {
		name = r.Scope
	}
	dir, err := backup.NewBackupDir(r.Root, name, now())
	if err != nil {
		return err
	}
	w.Dir = dir
	// Every backup says which revision its write was judged at: a restore
	// takes what was created after it for another instance of that name.
	// A job that gives none is judged no later than now.
	scanRev := r.ScanRevision
	if scanRev == 0 {
		resp, err := job.Client.Get(ctx, job.Prefix, clientv3.WithCountOnly(), clientv3.WithLimit(1))
		if err != nil {
			return fmt.Errorf("read etcd's revision: %w", err)
		}
		scanRev = resp.Header.Revision
	}
	entries, skipped, err := Capture(ctx, job.Client, ds, r.Keys)
	if err != nil {
		return err
	}
	if err := recordNeeds(ctx, job.Client, job.Prefix, entries); err != nil {
		return err
	}
	w.Skipped = skipped
	if len(entries) == 0 && len(r.Create) == 0 {
		return errors.New("every planned key changed since the plan")
	}
	entries = append(entries, r.Create...)
	if err := snapshot.CheckSpace(ctx, job.Client, ds, dir, entries, r.Snapshot != nil); err != nil {
		return err
	}
	if r.Snapshot != nil {
		file := snapshot.SnapshotFile
		if ds.Limited() {
			file = snapshot.LogicalSnapshotFile
		}
		snap, ep, err := snapshot.TakeSnapshot(ctx, job.Client, *r.Snapshot, filepath.Join(dir, file), r.ScanRevision)
		if err != nil {
			return err
		}
		if err := snapshot.SnapshotHolds(snap.Path, entries[:len(entries)-len(r.Create)]); err != nil {
			return err
		}
		out.Snapshot, out.Endpoint = snap, ep
	}
	endpoint := out.Endpoint
	if endpoint == "" && len(job.Client.Endpoints()) > 0 {
		endpoint = job.Client.Endpoints()[0]
	}
	path, written, err := backup.WriteBackup(dir, &backup.Backup{
		Created: now().UTC(), Scope: r.Scope, Action: r.Action, Prefix: job.Prefix, Endpoint: endpoint,
		ClusterID: here.ClusterID, KubeSystemUID: here.KubeSystemUID, ScanRevision: scanRev,
		Snapshot: out.Snapshot, Entries: entries,
	})
	if err != nil {
		return err
	}
	out.Backup, w.Backup = path, written
	return nil
}

// stopOrHalt is a stop channel closed when one of stops is (a signal, the
// etcd lock lost), or when halt is called (the audit log cannot be
// written); done ends the watch.
func stopOrHalt(stops ...<-chan struct{}) (merged <-chan struct{}, halt func(), done func()) {
	ch := make(chan struct{})
	var once sync.Once
	halt = func() { once.Do(func() { close(ch) }) }
	quit := make(chan struct{})
	for _, stop := range stops {
		if stop == nil {
			continue
		}
		go func() {
			select {
			case <-stop:
				halt()
			case <-quit:
			}
		}()
	}
	return ch, halt, func() { close(quit) }
}

// preflight refuses, before the lock is taken (so a refused run writes
// nothing to etcd, not even a lock), a backup root without room for the
// snapshot (the database alone is the most of it) or for a backup, with
// the reserve the disk keeps. The space is checked again, with the keys
// captured, before anything is written there.
func preflight(ctx context.Context, job Job, ds etcdwrite.Datastore) error {
	r := job.Backup
	if r == nil {
		return nil
	}
	if r.Root == "" {
		return errors.New("no backup directory: pass --backup-dir")
	}
	if err := os.MkdirAll(r.Root, 0o700); err != nil {
		return fmt.Errorf("create backup directory %s: %w", r.Root, err)
	}
	return snapshot.CheckSpace(ctx, job.Client, ds, r.Root, nil, r.Snapshot != nil)
}
