// Package snapshot takes and verifies full snapshots of the datastore before
// a write: etcd's own snapshot stream, or a logical snapshot of kine, which
// has no snapshot RPC.
package snapshot

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/snapshot"
	etcdutl "go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.etcd.io/etcd/server/v3/storage/mvcc"
	"go.etcd.io/etcd/server/v3/storage/schema"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/dbfile"
	"github.com/regghost/regghost/pkg/diskroom"
	"github.com/regghost/regghost/pkg/etcdwrite"

	"github.com/regghost/regghost/pkg/etcdconn"
)

// SnapshotFile is the name of the full snapshot inside a backup directory.
const SnapshotFile = "snapshot.db"

// TakeSnapshot saves a verified snapshot of the keyspace at a revision no
// older than minRev to path, from the first endpoint that answers and has
// caught up. From etcd it streams etcd's snapshot (SaveSnapshot); from a
// server without the snapshot RPC (kine) it writes a logical snapshot
// (SaveLogical). It returns the endpoint it used.
func TakeSnapshot(ctx context.Context, cli *clientv3.Client, cfg clientv3.Config, path string, minRev int64) (*backup.SnapshotInfo, string, error) {
	var why []string
	for _, ep := range cfg.Endpoints {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		st, err := cli.Status(sctx, ep)
		cancel()
		switch {
		case err != nil:
			why = append(why, fmt.Sprintf("%s: %v", ep, err))
		case etcdwrite.DatastoreOf(st).Limited():
			info, err := SaveLogical(ctx, cli, etcdwrite.DatastoreOf(st), path, minRev)
			return info, ep, err
		case st.Header.Revision < minRev:
			why = append(why, fmt.Sprintf("%s: at revision %d, behind the scan's %d", ep, st.Header.Revision, minRev))
		default:
			one := cfg
			one.Endpoints = []string{ep}
			info, err := SaveSnapshot(ctx, one, path)
			if err == nil && info.Revision < minRev {
				err = fmt.Errorf("snapshot revision %d is older than the scan's %d", info.Revision, minRev)
			}
			return info, ep, err
		}
	}
	return nil, "", fmt.Errorf("no etcd member can give a snapshot at the scan's revision %d: %s", minRev, strings.Join(why, "; "))
}

// SaveSnapshot streams a snapshot from exactly one endpoint to path (through
// path.part, fsynced, then renamed, as etcdctl does) and verifies it.
func SaveSnapshot(ctx context.Context, cfg clientv3.Config, path string) (*backup.SnapshotInfo, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, fmt.Errorf("snapshot needs an endpoint")
	}
	cfg.Endpoints = cfg.Endpoints[:1]
	if err := etcdconn.CheckCredentials(cfg); err != nil {
		return nil, err
	}
	if _, err := os.Stat(path); err == nil {
		return nil, fmt.Errorf("snapshot %s already exists; refusing to overwrite it", path)
	}
	version, err := snapshot.SaveWithVersion(ctx, zap.NewNop(), cfg, path)
	if err != nil {
		return nil, fmt.Errorf("save snapshot from %s to %s: %w", cfg.Endpoints[0], path, err)
	}
	if err := backup.SyncDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	info, err := VerifySnapshot(path)
	if err != nil {
		return nil, err
	}
	info.EtcdVersion = version
	return info, nil
}

// VerifySnapshot checks a snapshot file: its trailing sha256 must match the
// data before it, and bbolt's consistency check must pass (the check
// `etcdutl snapshot status` runs, which also yields hash, revision and key count).
// A logical snapshot is verified by VerifyLogical.
func VerifySnapshot(path string) (*backup.SnapshotInfo, error) {
	if IsLogical(path) {
		return VerifyLogical(path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open snapshot: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat snapshot: %w", err)
	}
	size := st.Size()
	if size%512 != sha256.Size {
		return nil, fmt.Errorf("snapshot %s has no trailing sha256 (size %d): it is truncated or not a snapshot stream", path, size)
	}
	h := sha256.New()
	if _, err := io.CopyN(h, f, size-sha256.Size); err != nil {
		return nil, fmt.Errorf("read snapshot %s: %w", path, err)
	}
	want := make([]byte, sha256.Size)
	if _, err := io.ReadFull(f, want); err != nil {
		return nil, fmt.Errorf("read snapshot checksum %s: %w", path, err)
	}
	if got := h.Sum(nil); !bytes.Equal(got, want) {
		return nil, fmt.Errorf("snapshot %s is corrupt: sha256 %x, trailer says %x", path, got, want)
	}
	// bbolt's consistency check runs on a goroutine of its own, where a
	// fault on a page past the end of the file cannot be caught: the
	// file's size is checked against its meta pages first.
	if err := dbfile.CheckSize(path); err != nil {
		return nil, err
	}
	status, err := etcdutl.NewV3(zap.NewNop()).Status(path)
	if err != nil {
		return nil, fmt.Errorf("snapshot %s fails the consistency check: %w", path, err)
	}
	return &backup.SnapshotInfo{Path: path, Size: size, SHA256: hex.EncodeToString(want), Hash: status.Hash,
		Revision: status.Revision, TotalKeys: status.TotalKey}, nil
}

// SnapshotHolds checks that the latest revision of every entry's key in the
// snapshot is exactly the entry: same mod revision, same bytes. It proves the
// snapshot can bring back everything that is about to be deleted.
func SnapshotHolds(path string, entries []backup.Entry) error {
	if IsLogical(path) {
		return logicalHolds(path, entries)
	}
	want := make(map[string]*backup.Entry, len(entries))
	for i := range entries {
		want[entries[i].Key] = &entries[i]
	}
	latest := make(map[string]*mvccpb.KeyValue, len(entries))
	if err := dbfile.CheckSize(path); err != nil {
		return err
	}
	db, err := bolt.Open(path, 0o400, &bolt.Options{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("open snapshot %s: %w", path, err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(schema.Key.Name())
		if b == nil {
			return fmt.Errorf("snapshot %s has no key bucket", path)
		}
		return b.ForEach(func(k, v []byte) error {
			var kv mvccpb.KeyValue
			if err := proto.Unmarshal(v, &kv); err != nil {
				return fmt.Errorf("snapshot %s: revision %x: %w", path, k, err)
			}
			if _, ok := want[string(kv.Key)]; !ok {
				return nil
			}
			if mvcc.IsTombstone(k) {
				delete(latest, string(kv.Key))
				return nil
			}
			latest[string(kv.Key)] = &kv
			return nil
		})
	})
	if err != nil {
		return err
	}
	for key, e := range want {
		kv, ok := latest[key]
		switch {
		case !ok:
			return fmt.Errorf("snapshot %s does not hold %s", path, key)
		case kv.ModRevision != e.ModRevision || !bytes.Equal(kv.Value, e.Value):
			return fmt.Errorf("snapshot %s holds %s at revision %d, backup has revision %d", path, key, kv.ModRevision, e.ModRevision)
		}
	}
	return nil
}

// DisasterRestoreCommand is the command that brings the whole keyspace back
// from a snapshot. For etcd's snapshot it is etcdutl's, which rebuilds a data
// directory: --bump-revision with --mark-compacted keeps Kubernetes watchers
// from seeing revisions go back; the restored member gets new member and
// cluster IDs; the data dir must not exist yet. For a logical snapshot it is
// regghost's, which by default writes back the purge's own keys that are
// absent now (--all-absent: every key of the snapshot absent now).
func DisasterRestoreCommand(info *backup.SnapshotInfo) string {
	if info.Format == "logical" {
		return fmt.Sprintf("regghost snapshot restore %s --confirm   # writes back this purge's own keys; %s writes every key of the snapshot absent now", info.Path, AllAbsentFlag)
	}
	return fmt.Sprintf("etcdutl snapshot restore %s --data-dir /var/lib/etcd-restored --bump-revision 1000000000 --mark-compacted", info.Path)
}

// CheckSpace refuses a write whose backup (with a snapshot of the
// database when withSnapshot) would not fit in dir while leaving the
// reserve every file regghost writes keeps (diskroom's rule: kubelet
// evicts pods below 10% free, and etcd's data may share the disk).
func CheckSpace(ctx context.Context, cli *clientv3.Client, ds etcdwrite.Datastore, dir string, entries []backup.Entry, withSnapshot bool) error {
	var need int64 = 64 << 10
	if withSnapshot {
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
		need += size + 4096
		if ds.Limited() {
			// A logical snapshot is base64 in JSON: up to about twice the database.
			need += size
		}
	}
	for _, e := range entries {
		need += int64(len(e.Key)) + int64(len(e.Value))*4/3 + 512
	}
	need += need / 10
	room, err := diskroom.Of(dir)
	if err != nil {
		return err
	}
	if !room.Fits(uint64(need)) {
		what := "the backup"
		if withSnapshot {
			what = "the snapshot and backup"
		}
		return fmt.Errorf("no room for %s (%d MiB): %s; nothing was written: free space there or pass --backup-dir on another filesystem", what, (need+1<<20-1)>>20, room)
	}
	return nil
}
