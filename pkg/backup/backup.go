// Package backup holds the record every regghost write leaves before it
// changes anything: a backup directory with each key it touches as etcd held
// it (raw bytes, revisions, lease TTL), the cluster's identity, checksums
// that are verified on every read, an append-only audit log of what became
// of each key, and the listing of backup directories.
package backup

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

// BackupFormat identifies the backup file format.
const BackupFormat = "regghost.io/backup/v1"

// BackupFile is the name of the per-key backup inside a backup directory.
const BackupFile = "backup.json"

// Entry is one key exactly as etcd held it before it was deleted. Value holds
// the raw stored bytes (protobuf, JSON or k8s:enc:-prefixed), never re-encoded.
type Entry struct {
	Key            string `json:"key"`
	Value          []byte `json:"value"`
	CreateRevision int64  `json:"createRevision"`
	ModRevision    int64  `json:"modRevision"`
	Version        int64  `json:"version"`
	Lease          int64  `json:"lease,omitempty"`
	// LeaseTTL is what was left of the lease's TTL, in seconds, when the key
	// was backed up: restore gives the key a new lease of that TTL, so a
	// restored Event still expires.
	LeaseTTL int64 `json:"leaseTTL,omitempty"`
	// LeaseTTLUnknown says why the lease's TTL could not be read when the
	// key was backed up (LeaseTTL is then 0, which is not "no lease").
	LeaseTTLUnknown string `json:"leaseTTLUnknown,omitempty"`
	// Classes and Reason say why the key was purged.
	Classes []string `json:"classes,omitempty"`
	Reason  string   `json:"reason,omitempty"`
	// Absent are the keys whose absence made it a ghost (its namespace key,
	// its CRD key); the delete happens only while they are still absent, so
	// they are the witnesses that were absent when the key was deleted.
	// Restore refuses to write the key while one of them exists again (it
	// would join another namespace or CRD of that name); backups without the
	// record are judged from the key's path (see witnessKeys).
	Absent []string `json:"absent,omitempty"`
	// Rewritten is set when regghost rewrote the key through the API server
	// (a webhook entry or a binding subject removed) rather than deleting
	// it: the mod revision it left the key at. restore writes the backed-up
	// bytes back over it only while the key is still at that revision, so a
	// change made since is never overwritten.
	Rewritten int64 `json:"rewritten,omitempty"`
	// Witnesses says who stood behind the verdict: "two", or "single (...)".
	Witnesses string `json:"witnesses,omitempty"`
	// Role is empty for a key the purge deleted; RoleRetainedVolume for a
	// PersistentVolume it set to Retain first.
	Role string `json:"role,omitempty"`
	// Present are, for a recovered key, the keys that had to exist for it
	// to be written (its namespace, its CRD).
	Present []Present `json:"present,omitempty"`
	// Needs are the keys that existed when the key was captured and that
	// it rests on (its namespace, its CRD; see Witnesses), at their create
	// revision then: restore refuses to write it back while one of them is
	// gone (unless the backup brings that one back too) or was created
	// again since, so that an undo never writes a ghost, nor into another
	// namespace of that name.
	Needs []Present `json:"needs,omitempty"`
}

// Backup is the content of a backup file.
type Backup struct {
	// Actions are the actions its audit log records, read with it (not
	// stored in it): what wrote a backup whose Action was not recorded.
	Actions []string  `json:"-"`
	Format  string    `json:"format"`
	Created time.Time `json:"created"`
	// Scope is what the purge was asked to remove ("namespace kb-system").
	Scope string `json:"scope"`
	// Action is empty for a purge's backup; ActionRecover for the keys a
	// recovery created (restore then deletes them).
	Action string `json:"action,omitempty"`
	// Prefix is the registry prefix the keys are under.
	Prefix string `json:"prefix,omitempty"`
	// Endpoint is the etcd endpoint the snapshot came from.
	Endpoint  string `json:"endpoint"`
	ClusterID string `json:"clusterID"`
	// KubeSystemUID is the UID of the cluster's kube-system namespace when
	// the backup was taken: the Kubernetes cluster's identity, which an etcd
	// restored from a snapshot keeps (its cluster ID changes). Empty in
	// backups written before it was recorded.
	KubeSystemUID string `json:"kubeSystemUID,omitempty"`
	// ScanRevision is the etcd revision the scan read at.
	ScanRevision int64         `json:"scanRevision"`
	Snapshot     *SnapshotInfo `json:"snapshot"`
	Count        int           `json:"count"`
	// EntriesSHA256 is the sha256 of the JSON encoding of Entries.
	EntriesSHA256 string  `json:"entriesSHA256"`
	Entries       []Entry `json:"entries"`
	// SHA256 is the sha256 of the JSON encoding of the whole backup with
	// this field empty: scope, cluster, snapshot and entries. A backup
	// without it is invalid: its header could have been edited unseen.
	SHA256 string `json:"sha256,omitempty"`
}

// wholeSum is the checksum of everything in b but SHA256 itself.
func wholeSum(b Backup) (string, error) {
	b.SHA256 = ""
	data, err := json.Marshal(b)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

func entriesSum(entries []Entry) (string, error) {
	b, err := json.Marshal(entries)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// WriteBackup writes b to dir/backup.json atomically: a temporary file,
// fsync, rename, fsync of the directory. It then reads the file back and
// verifies it, so a backup that reached the disk damaged is never trusted,
// and returns the path and the backup as read back from disk.
func WriteBackup(dir string, b *Backup) (string, *Backup, error) {
	b.Format = BackupFormat
	b.Count = len(b.Entries)
	sum, err := entriesSum(b.Entries)
	if err != nil {
		return "", nil, fmt.Errorf("checksum backup entries: %w", err)
	}
	b.EntriesSHA256 = sum
	if b.SHA256, err = wholeSum(*b); err != nil {
		return "", nil, fmt.Errorf("checksum backup: %w", err)
	}
	data, err := json.MarshalIndent(b, "", " ")
	if err != nil {
		return "", nil, fmt.Errorf("encode backup: %w", err)
	}
	path := filepath.Join(dir, BackupFile)
	if err := writeFileSync(path, data); err != nil {
		return "", nil, err
	}
	back, err := ReadBackup(path)
	if err != nil {
		return "", nil, fmt.Errorf("verify written backup: %w", err)
	}
	if back.Count != len(b.Entries) {
		return "", nil, fmt.Errorf("verify written backup %s: %d entries, want %d", path, back.Count, len(b.Entries))
	}
	return path, back, nil
}

// writeFileSync writes data to path through path.part with fsyncs, so that
// path either does not exist or holds all of data.
func writeFileSync(path string, data []byte) error {
	part := path + ".part"
	f, err := os.OpenFile(part, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("create %s: %w", part, err)
	}
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(part)
		return fmt.Errorf("write %s: %w", part, werr)
	}
	if err := os.Rename(part, path); err != nil {
		os.Remove(part)
		return fmt.Errorf("rename %s: %w", part, err)
	}
	return SyncDir(filepath.Dir(path))
}

// SyncDir fsyncs a directory, so a file renamed into it stays after a crash.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", dir, err)
	}
	return nil
}

// ErrCorruptBackup is returned (wrapped) for a backup that fails verification.
var ErrCorruptBackup = errors.New("backup is corrupt")

// ReadBackup reads and verifies a backup file, or the backup.json inside a
// backup directory.
func ReadBackup(path string) (*Backup, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, BackupFile)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read backup: %w", err)
	}
	var b Backup
	if err := json.Unmarshal(data, &b); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorruptBackup, path, err)
	}
	if b.Format != BackupFormat {
		return nil, fmt.Errorf("%w: %s: format %q, want %q", ErrCorruptBackup, path, b.Format, BackupFormat)
	}
	if b.Count != len(b.Entries) {
		return nil, fmt.Errorf("%w: %s: holds %d entries, header says %d", ErrCorruptBackup, path, len(b.Entries), b.Count)
	}
	sum, err := entriesSum(b.Entries)
	if err != nil {
		return nil, fmt.Errorf("checksum %s: %w", path, err)
	}
	if sum != b.EntriesSHA256 {
		return nil, fmt.Errorf("%w: %s: entries checksum %s, header says %s", ErrCorruptBackup, path, sum, b.EntriesSHA256)
	}
	if b.SHA256 == "" {
		return nil, fmt.Errorf("%w: %s: its header has no checksum (sha256), so a change to its scope, cluster or snapshot would go unseen", ErrCorruptBackup, path)
	}
	whole, err := wholeSum(b)
	if err != nil {
		return nil, fmt.Errorf("checksum %s: %w", path, err)
	}
	if whole != b.SHA256 {
		return nil, fmt.Errorf("%w: %s: its header (scope, cluster or snapshot) was changed: checksum %s, recorded %s", ErrCorruptBackup, path, whole, b.SHA256)
	}
	seen := map[string]bool{}
	for _, e := range b.Entries {
		if e.Key == "" || seen[e.Key] {
			return nil, fmt.Errorf("%w: %s: empty or repeated key %q", ErrCorruptBackup, path, e.Key)
		}
		seen[e.Key] = true
	}
	b.Actions = auditActions(filepath.Dir(path))
	return &b, nil
}

// Present is a key that must exist, as the same incarnation (create
// revision), for a recovered key to be written: its namespace, its
// CustomResourceDefinition. A recovered object without them is a ghost.
type Present struct {
	Key            string `json:"key"`
	CreateRevision int64  `json:"createRevision"`
	// What names it for reports ("namespace kb-system").
	What string `json:"what,omitempty"`
}

// ActionRecover marks a backup written by `regghost recover`: its entries
// are the keys the recovery created. restore undoes it by deleting those
// that nobody changed since.
const ActionRecover = "recover"

// ActionDangling names a dangling fix in the audit log, where each object
// it rewrote is journaled with the revision it left it at.
const ActionDangling = "dangling"

// ActionUnstick names unstick in the audit log, where each object whose
// finalizers it removed is journaled with the revision it left it at.
const ActionUnstick = "unstick"

// ActionMigrate names migrate in the audit log, where each edit of the
// CustomResourceDefinition it migrates is journaled with the revision it
// left the CRD at.
const ActionMigrate = "migrate"

// RoleRetainedVolume marks a backup entry that holds a PersistentVolume as
// it was before purge set it to Retain. restore never writes it back: the
// original asks for the storage to be deleted.
const RoleRetainedVolume = "retained-volume"

// SnapshotInfo describes a verified snapshot file, as recorded in the backup.
type SnapshotInfo struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
	// SHA256 is the checksum etcd appended to the stream, recomputed and matched.
	SHA256 string `json:"sha256"`
	// Hash, Revision and TotalKeys are what `etcdutl snapshot status` reports.
	Hash        uint32 `json:"hash"`
	Revision    int64  `json:"revision"`
	TotalKeys   int    `json:"totalKeys"`
	EtcdVersion string `json:"etcdVersion,omitempty"`
	// Format is "logical" for a logical snapshot (see SaveLogical), empty
	// for etcd's own snapshot file.
	Format string `json:"format,omitempty"`
	// Datastore is the server the snapshot came from ("kine"); empty for etcd.
	Datastore string `json:"datastore,omitempty"`
}

// EntryOf is the entry of a key as etcd holds it: its raw bytes, revisions
// and lease.
func EntryOf(kv *mvccpb.KeyValue) Entry {
	return Entry{Key: string(kv.Key), Value: kv.Value, CreateRevision: kv.CreateRevision, ModRevision: kv.ModRevision, Version: kv.Version, Lease: kv.Lease}
}
