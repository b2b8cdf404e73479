package snapshot

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/etcdwrite"
)

// LogicalFormat identifies a logical snapshot: what purge takes where the
// server has no snapshot RPC (kine).
const LogicalFormat = "regghost.io/logical-snapshot/v1"

// LogicalSnapshotFile is the name of a logical snapshot inside a backup directory.
const LogicalSnapshotFile = "snapshot.jsonl"

// logicalHeader is the first line of a logical snapshot.
type logicalHeader struct {
	Format    string              `json:"format"`
	Created   time.Time           `json:"created"`
	Revision  int64               `json:"revision"`
	Datastore etcdwrite.Datastore `json:"datastore"`
}

// logicalTrailer is the last line: the key count and the sha256 of every
// byte before it.
type logicalTrailer struct {
	End    bool   `json:"end"`
	Count  int    `json:"count"`
	SHA256 string `json:"sha256"`
}

// SaveLogical writes every key and value of the keyspace, read at one
// revision no older than minRev, to path: a header line, one JSON line per
// key (the raw value bytes, revisions, version and lease) and a trailer with
// the count and a sha256 of everything before it. It writes through
// path.part, fsyncs and renames, then verifies the file by reading it back.
func SaveLogical(ctx context.Context, kv clientv3.KV, ds etcdwrite.Datastore, path string, minRev int64) (*backup.SnapshotInfo, error) {
	if _, err := os.Stat(path); err == nil {
		return nil, fmt.Errorf("snapshot %s already exists; refusing to overwrite it", path)
	}
	store, err := etcdscan.NewEtcdStore(ctx, kv, etcdscan.DefaultPageSize)
	if err != nil {
		return nil, err
	}
	if store.Revision() < minRev {
		return nil, fmt.Errorf("%s is at revision %d, behind the scan's %d", ds.Name, store.Revision(), minRev)
	}
	part := path + ".part"
	f, err := os.OpenFile(part, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", part, err)
	}
	werr := writeLogical(ctx, f, store, ds)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(part, path)
	}
	if werr != nil {
		os.Remove(part)
		return nil, fmt.Errorf("logical snapshot %s: %w", path, werr)
	}
	if err := backup.SyncDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	return VerifyLogical(path)
}

func writeLogical(ctx context.Context, f io.Writer, store *etcdscan.EtcdStore, ds etcdwrite.Datastore) error {
	h := sha256.New()
	w := bufio.NewWriterSize(io.MultiWriter(f, h), 1<<20)
	enc := json.NewEncoder(w)
	if err := enc.Encode(logicalHeader{Format: LogicalFormat, Created: time.Now().UTC(), Revision: store.Revision(), Datastore: ds}); err != nil {
		return err
	}
	// etcd reads the whole keyspace as ["\x00", "\x00"); kine reads that
	// pair alone as everything but takes a range end literally once paging
	// moves the start, so there the range is spelled out: from the first
	// byte a SQL text key can hold to the last code point.
	start, end := "\x00", "\x00"
	if ds.Limited() {
		start, end = "\x01", "\U0010FFFF"
	}
	n := 0
	err := store.Range(ctx, start, end, false, func(kv *mvccpb.KeyValue) error {
		n++
		return enc.Encode(backup.Entry{Key: string(kv.Key), Value: kv.Value, CreateRevision: kv.CreateRevision,
			ModRevision: kv.ModRevision, Version: kv.Version, Lease: kv.Lease})
	})
	if err != nil {
		return fmt.Errorf("read the keyspace at revision %d: %w", store.Revision(), err)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return json.NewEncoder(f).Encode(logicalTrailer{End: true, Count: n, SHA256: hex.EncodeToString(h.Sum(nil))})
}

// IsLogical reports whether path holds a logical snapshot.
func IsLogical(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 64)
	n, _ := io.ReadFull(f, head)
	return bytes.HasPrefix(head[:n], []byte(`{"format":"`+LogicalFormat+`"`))
}

// VerifyLogical reads a logical snapshot through: every line must parse, the
// keys must be distinct and in order, and the trailer's count and sha256
// must match.
func VerifyLogical(path string) (*backup.SnapshotInfo, error) {
	var info *backup.SnapshotInfo
	err := readLogical(path, func(*backup.Entry) error { return nil }, func(i *backup.SnapshotInfo) { info = i })
	return info, err
}

// ReadLogical verifies a logical snapshot and returns its entries.
func ReadLogical(path string) (*backup.SnapshotInfo, []backup.Entry, error) {
	var entries []backup.Entry
	var info *backup.SnapshotInfo
	err := readLogical(path, func(e *backup.Entry) error {
		entries = append(entries, *e)
		return nil
	}, func(i *backup.SnapshotInfo) { info = i })
	if err != nil {
		return nil, nil, err
	}
	return info, entries, nil
}

// errLogical says a logical snapshot is damaged.
var errLogical = errors.New("logical snapshot is damaged")

func readLogical(path string, fn func(*backup.Entry) error, done func(*backup.SnapshotInfo)) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open snapshot: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	r := bufio.NewReaderSize(f, 1<<20)
	var size int64
	line := func() ([]byte, error) {
		b, err := r.ReadBytes('\n')
		size += int64(len(b))
		if err == io.EOF && len(b) == 0 {
			return nil, fmt.Errorf("%w: %s ends without its trailer (truncated)", errLogical, path)
		}
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		return b, nil
	}
	first, err := line()
	if err != nil {
		return err
	}
	h.Write(first)
	var hdr logicalHeader
	if err := json.Unmarshal(first, &hdr); err != nil || hdr.Format != LogicalFormat {
		return fmt.Errorf("%w: %s has no logical snapshot header", errLogical, path)
	}
	n := 0
	var prev string
	for {
		b, err := line()
		if err != nil {
			return err
		}
		if bytes.HasPrefix(b, []byte(`{"end":`)) {
			var t logicalTrailer
			if err := json.Unmarshal(b, &t); err != nil {
				return fmt.Errorf("%w: %s: trailer: %v", errLogical, path, err)
			}
			sum := hex.EncodeToString(h.Sum(nil))
			switch {
			case t.SHA256 != sum:
				return fmt.Errorf("%w: %s: sha256 %s, trailer says %s", errLogical, path, sum, t.SHA256)
			case t.Count != n:
				return fmt.Errorf("%w: %s: %d keys, trailer says %d", errLogical, path, n, t.Count)
			}
			if _, err := r.ReadByte(); err == nil {
				return fmt.Errorf("%w: %s has data after its trailer", errLogical, path)
			}
			done(&backup.SnapshotInfo{Path: path, Size: size, SHA256: sum, Revision: hdr.Revision, TotalKeys: n,
				EtcdVersion: hdr.Datastore.Version, Format: "logical", Datastore: hdr.Datastore.Name})
			return nil
		}
		h.Write(b)
		var e backup.Entry
		if err := json.Unmarshal(b, &e); err != nil {
			return fmt.Errorf("%w: %s: key %d: %v", errLogical, path, n+1, err)
		}
		if e.Key <= prev && n > 0 {
			return fmt.Errorf("%w: %s: key %q out of order", errLogical, path, e.Key)
		}
		prev = e.Key
		n++
		if err := fn(&e); err != nil {
			return err
		}
	}
}

// logicalHolds checks that the logical snapshot holds every entry exactly.
func logicalHolds(path string, entries []backup.Entry) error {
	want := make(map[string]*backup.Entry, len(entries))
	for i := range entries {
		want[entries[i].Key] = &entries[i]
	}
	err := readLogical(path, func(e *backup.Entry) error {
		w, ok := want[e.Key]
		if !ok {
			return nil
		}
		if e.ModRevision != w.ModRevision || !bytes.Equal(e.Value, w.Value) {
			return fmt.Errorf("snapshot %s holds %s at revision %d, backup has revision %d", path, e.Key, e.ModRevision, w.ModRevision)
		}
		delete(want, e.Key)
		return nil
	}, func(*backup.SnapshotInfo) {})
	if err != nil {
		return err
	}
	for key := range want {
		return fmt.Errorf("snapshot %s does not hold %s", path, key)
	}
	return nil
}

// BackupFromLogical turns a logical snapshot into a backup restore can
// write back: every key under prefix (every key when prefix is empty). The
// keys of a kine snapshot keep their TTL (kine's lease is the TTL).
func BackupFromLogical(path, prefix string) (*backup.Backup, error) {
	info, entries, err := ReadLogical(path)
	if err != nil {
		return nil, err
	}
	b := &backup.Backup{Format: backup.BackupFormat, Scope: "logical snapshot " + path, Snapshot: info, ScanRevision: info.Revision}
	b.KubeSystemUID = kubeSystemUID(entries)
	for _, e := range entries {
		if !strings.HasPrefix(e.Key, prefix) {
			continue
		}
		if e.Lease != 0 && info.Datastore == "kine" {
			e.LeaseTTL = e.Lease
		}
		b.Entries = append(b.Entries, e)
	}
	b.Count = len(b.Entries)
	return b, nil
}

// AllAbsentFlag is the snapshot restore flag that writes back every key of a
// logical snapshot absent now, not only its purge's.
const AllAbsentFlag = "--all-absent"

// ErrNoPurgeBackup is returned (wrapped) for a logical snapshot with no
// verified backup of its purge beside it.
var ErrNoPurgeBackup = errors.New("no purge backup beside the snapshot")

// PurgeBackupOf reads and verifies the backup of the purge that took the
// logical snapshot at path: the backup.json in the same directory, whose
// snapshot record holds this snapshot's sha256.
func PurgeBackupOf(path string, info *backup.SnapshotInfo) (*backup.Backup, error) {
	bp := filepath.Join(filepath.Dir(path), backup.BackupFile)
	if _, err := os.Stat(bp); err != nil {
		return nil, fmt.Errorf("%w %s: no %s", ErrNoPurgeBackup, path, bp)
	}
	b, err := backup.ReadBackup(bp)
	if err != nil {
		return nil, err
	}
	if b.Snapshot == nil || b.Snapshot.SHA256 != info.SHA256 {
		recorded := "none"
		if b.Snapshot != nil {
			recorded = b.Snapshot.SHA256
		}
		return nil, fmt.Errorf("%w %s: %s is the backup of another snapshot (sha256 %s; this one is %s)", ErrNoPurgeBackup, path, bp, recorded, info.SHA256)
	}
	return b, nil
}

// BackupFromLogicalPurge turns a logical snapshot into a backup restore can
// write back. By default it holds its purge's own keys under prefix (every
// key the purge deleted, and the volumes it set to Retain, which restore
// leaves as they are), with the snapshot's bytes and the purge's record of
// each key: the witnesses that were absent when it was deleted, which
// restore compares as the delete did. It needs the purge's backup beside
// the snapshot (PurgeBackupOf). With all it holds every key of the snapshot
// under prefix, the purge's record kept for the purge's keys when its backup
// is there: restore then writes back every key absent now, whoever deleted it.
func BackupFromLogicalPurge(path, prefix string, all bool) (*backup.Backup, error) {
	info, entries, err := ReadLogical(path)
	if err != nil {
		return nil, err
	}
	purge, perr := PurgeBackupOf(path, info)
	if perr != nil && !all {
		return nil, perr
	}
	b := &backup.Backup{Format: backup.BackupFormat, Scope: "logical snapshot " + path, Snapshot: info, ScanRevision: info.Revision}
	b.KubeSystemUID = kubeSystemUID(entries)
	record := map[string]backup.Entry{}
	if perr == nil {
		b.Prefix, b.ClusterID = purge.Prefix, purge.ClusterID
		if b.KubeSystemUID == "" {
			b.KubeSystemUID = purge.KubeSystemUID
		}
		for _, e := range purge.Entries {
			record[e.Key] = e
		}
		if !all {
			b.Scope = "the keys purge " + purge.Scope + " deleted, from logical snapshot " + path
			b.ScanRevision = purge.ScanRevision
		}
	}
	found := 0
	for _, e := range entries {
		if !strings.HasPrefix(e.Key, prefix) {
			continue
		}
		r, ok := record[e.Key]
		if !ok && !all {
			continue
		}
		if ok {
			found++
			if e.ModRevision != r.ModRevision || !bytes.Equal(e.Value, r.Value) {
				return nil, fmt.Errorf("%w: %s holds %s at mod revision %d, its purge's backup at %d", errLogical, path, e.Key, e.ModRevision, r.ModRevision)
			}
			e.Classes, e.Reason, e.Absent, e.Witnesses, e.Role = r.Classes, r.Reason, r.Absent, r.Witnesses, r.Role
		}
		if e.Lease != 0 && info.Datastore == "kine" {
			e.LeaseTTL = e.Lease
		}
		b.Entries = append(b.Entries, e)
	}
	if !all {
		want := 0
		for _, r := range purge.Entries {
			if strings.HasPrefix(r.Key, prefix) {
				want++
			}
		}
		if found != want {
			return nil, fmt.Errorf("%w: %s holds %d of the %d keys its purge backed up under %q", errLogical, path, found, want, prefix)
		}
	}
	b.Count = len(b.Entries)
	return b, nil
}

// kubeSystemUID is the identity of the cluster a logical snapshot was taken
// of: the UID of the kube-system namespace it holds ("" without one).
func kubeSystemUID(entries []backup.Entry) string {
	for _, e := range entries {
		if strings.HasSuffix(e.Key, "/namespaces/kube-system") {
			uid, _ := backup.KubeSystemUID(context.Background(), e.Key, e.Value, nil)
			return uid
		}
	}
	return ""
}
