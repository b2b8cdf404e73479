package dbfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/server/v3/storage/mvcc"
	"go.etcd.io/etcd/server/v3/storage/schema"
)

// Info says what a db file is: which revisions it holds and when it was
// taken.
type Info struct {
	// Path is the file given; DBPath the bbolt file read (a temporary file
	// for a zip-compressed snapshot, removed on Close).
	Path   string `json:"path"`
	DBPath string `json:"dbPath"`
	// Zipped is set for a zip-compressed snapshot (k3s etcd-snapshot
	// --etcd-snapshot-compress).
	Zipped bool `json:"zipped,omitempty"`
	// Size is the size of the bbolt file.
	Size int64 `json:"size"`
	// Revision is the newest revision in the file: the keyspace's
	// revision when it was taken.
	Revision int64 `json:"revision"`
	// CompactRevision is the revision of the file's last finished
	// compaction: every revision since is in the file, none before (but
	// each key's newest at it). 0: never compacted.
	CompactRevision int64 `json:"compactRevision"`
	// ScheduledCompactRevision is set when a compaction was scheduled
	// beyond the finished one: revisions up to it may be partly gone.
	ScheduledCompactRevision int64 `json:"scheduledCompactRevision,omitempty"`
	// Time is when the file was taken, and TimeSource where that was read
	// from: the unix time in a k3s snapshot's name, else the file's
	// modification time.
	Time       time.Time `json:"time"`
	TimeSource string    `json:"timeSource"`
}

// Where Info.Time was read from.
const (
	TimeFromK3sName = "the k3s snapshot name"
	TimeFromModTime = "the file's modification time"
)

// String is the one line every command reading a db file prints about it.
func (i Info) String() string {
	s := fmt.Sprintf("db file %s: revision %d", i.Path, i.Revision)
	if i.CompactRevision > 0 {
		s += fmt.Sprintf(", compacted at %d", i.CompactRevision)
	} else {
		s += ", never compacted"
	}
	s += fmt.Sprintf(", taken %s (from %s)", i.Time.UTC().Format(time.RFC3339), i.TimeSource)
	if i.Zipped {
		s += fmt.Sprintf("; unzipped to %s, removed once open", i.DBPath)
	}
	return s
}

// File is an etcd db file opened read-only: a plain bbolt file (etcdctl
// snapshot save, member/snap/db, k3s etcd-snapshot) or a zip-compressed k3s
// snapshot unzipped to a temporary file. Opening it reads its meta bucket
// and its last revision, nothing else.
type File struct {
	info Info
	db   *bolt.DB
	// tmp is the unzipped copy to remove on Close.
	tmp string
	// span is bbolt's memory map of the file; size is the file's size
	// when it was checked against its pages, before it was mapped.
	span span
	size int64
}

// k3sName matches a k3s snapshot's name, <name>-<node>-<unix time>, with
// .zip when compressed.
var k3sName = regexp.MustCompile(`-([0-9]{9,11})(\.zip)?$`)

// OpenFile opens path read-only: unzipped first to a temporary file when it
// is a zip holding one snapshot (k3s compresses them so). A db that a
// running etcd holds locked, a file that is not a bbolt db, a file shorter
// than the pages its meta page counts (checked before it is mapped:
// ErrTruncated) and a damaged one all give an error of one line.
func OpenFile(path string) (f *File, err error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("open db file: %w", err)
	}
	f = &File{info: Info{Path: path, DBPath: path, Time: st.ModTime(), TimeSource: TimeFromModTime}}
	if m := k3sName.FindStringSubmatch(filepath.Base(path)); m != nil {
		if sec, err := strconv.ParseInt(m[1], 10, 64); err == nil {
			f.info.Time, f.info.TimeSource = time.Unix(sec, 0), TimeFromK3sName
		}
	}
	if isZip(path) {
		tmp, err := unzipSnapshot(path)
		if err != nil {
			return nil, err
		}
		f.tmp, f.info.DBPath, f.info.Zipped = tmp, tmp, true
	}
	if f.size, err = f.checkSize(); err != nil {
		f.removeTmp()
		return nil, err
	}
	db, err := bolt.Open(f.info.DBPath, 0o400, &bolt.Options{ReadOnly: true, Timeout: 2 * time.Second})
	if err != nil {
		f.removeTmp()
		if errors.Is(err, bolt.ErrTimeout) {
			return nil, fmt.Errorf("db file %s is locked, probably by a running etcd: take a snapshot (regghost snapshot save) or copy the file", path)
		}
		return nil, fmt.Errorf("db file %s is not a readable etcd database: %v", path, oneLine(err))
	}
	f.db = db
	bi := db.Info()
	f.span = span{base: bi.Data, size: mapSize(f.size), pageSize: int64(bi.PageSize)}
	// The unzipped copy holds every Secret of the snapshot: it is removed
	// now, while bbolt holds it open and mapped, so nothing is left behind
	// however the command ends (a signal, a closed pipe).
	f.removeTmp()
	if err := f.readMeta(); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// checkSize is CheckSize of the file bbolt is to read, named as given, and
// its size.
func (f *File) checkSize() (int64, error) {
	r, err := os.Open(f.info.DBPath)
	if err != nil {
		return 0, fmt.Errorf("open db file: %w", err)
	}
	defer r.Close()
	st, err := r.Stat()
	if err != nil {
		return 0, fmt.Errorf("open db file: %w", err)
	}
	return st.Size(), checkSize(f.info.Path, r, st.Size())
}

// readMeta reads the file's compaction revisions and its newest revision.
func (f *File) readMeta() (err error) {
	defer f.guard(&err)()
	err = f.db.View(func(tx *bolt.Tx) error {
		f.info.Size = tx.Size()
		b := tx.Bucket(schema.Key.Name())
		if b == nil {
			return errors.New("no key bucket: not an etcd v3 database")
		}
		if meta := tx.Bucket(schema.Meta.Name()); meta != nil {
			if v := meta.Get(schema.FinishedCompactKeyName); len(v) >= 17 {
				f.info.CompactRevision = mvcc.BytesToRev(v).Main
			}
			if v := meta.Get(schema.ScheduledCompactKeyName); len(v) >= 17 {
				if s := mvcc.BytesToRev(v).Main; s > f.info.CompactRevision {
					f.info.ScheduledCompactRevision = s
				}
			}
		}
		f.info.Revision = f.info.CompactRevision
		if last, _ := b.Cursor().Last(); last != nil {
			if len(last) < 17 {
				return fmt.Errorf("key bucket holds %x, not a revision", last)
			}
			f.info.Revision = max(f.info.Revision, mvcc.BytesToRev(last).Main)
		}
		return nil
	})
	if err != nil {
		return f.damaged(err)
	}
	return nil
}

// Info says what the file is.
func (f *File) Info() Info { return f.info }

// Close closes the file and removes its unzipped copy.
func (f *File) Close() error {
	var err error
	if f.db != nil {
		err = f.db.Close()
	}
	f.removeTmp()
	return err
}

func (f *File) removeTmp() {
	if f.tmp != "" {
		os.Remove(f.tmp)
		f.tmp = ""
	}
}
