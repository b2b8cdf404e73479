package backup

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/plural"
)

// PruneOptions say which backups a prune may remove.
type PruneOptions struct {
	// Keep is how many of each cluster's newest verified backups stay
	// (at least one, whatever is asked).
	Keep int
	// OlderThan keeps every backup younger than it (0: any age may go).
	OlderThan time.Duration
	// Now is the time ages are counted to.
	Now time.Time
	// VerifySnapshot checks a backup's snapshot file (snapshot.VerifySnapshot:
	// its checksum and bbolt's consistency check). A backup whose snapshot
	// does not verify, or is not the one it recorded, is kept and does not
	// count among the verified backups that let older ones go. Nil checks
	// only that the file is there at its recorded size.
	VerifySnapshot func(path string) (*SnapshotInfo, error)
}

// PruneDecision is what a prune does with one backup directory, and why.
type PruneDecision struct {
	Path    string    `json:"path"`
	Created time.Time `json:"created,omitempty"`
	// Cluster is the cluster the backup was taken from (kube-system UID,
	// else etcd cluster ID).
	Cluster string `json:"cluster,omitempty"`
	Action  string `json:"action,omitempty"`
	// Bytes is what the directory holds on disk.
	Bytes  int64  `json:"bytes"`
	Remove bool   `json:"remove"`
	Why    string `json:"why"`
	// audit is the audit log's size when planned: a backup whose log
	// grew since (a restore ran) is judged again before it goes.
	audit int64
	// snap says whether it holds a snapshot that verified.
	snap bool
	// etcdID and revision are the etcd cluster and revision it was judged
	// at (0 when not recorded): newer than another of the same etcd
	// whatever the clocks of the nodes that wrote them say.
	etcdID   string
	revision int64
}

// newest sorts a cluster's backups newest first: by etcd revision when
// every one of them was taken from the same etcd and recorded its revision
// (nodes sharing a backup directory may disagree on the time), else by the
// time each recorded. One rule for the whole group keeps the order total.
func newest(out []PruneDecision, idx []int) {
	byRevision := true
	for _, i := range idx {
		d := out[i]
		byRevision = byRevision && d.etcdID != "" && d.etcdID == out[idx[0]].etcdID && d.revision != 0
	}
	sort.SliceStable(idx, func(a, b int) bool {
		x, y := out[idx[a]], out[idx[b]]
		if byRevision && x.revision != y.revision {
			return x.revision > y.revision
		}
		return x.Created.After(y.Created)
	})
}

// PlanPrune decides, for every backup directory under root, whether a
// prune removes it. It never removes: a backup that cannot be read or
// verified (inspect it by hand), one whose run was cut off (keys without an
// outcome), one whose undo is under way (a recovery not undone, whose undo
// reads its audit log; an undo that stopped partway; the evidence of a
// members replacement still under way), the newest verified
// backup of each cluster, the Keep newest of each cluster, or one younger
// than OlderThan. Any other may go, the undo of an older purge, dangling
// fix or unstick among them: its decision says so, and how many keys its
// write changed that no restore can put back once it is gone.
func PlanPrune(root string, o PruneOptions) ([]PruneDecision, error) {
	list, err := ListBackups(root)
	if err != nil {
		return nil, err
	}
	keep := max(o.Keep, 1)
	var out []PruneDecision
	byCluster := map[string][]int{}
	for _, s := range list {
		d := PruneDecision{Path: s.Path, Created: s.Created}
		if d.Bytes, err = dirBytes(s.Path); err != nil {
			return nil, err
		}
		out = append(out, d)
		i := len(out) - 1
		switch s.Status {
		case BackupUnusable:
			out[i].Why = "kept: it cannot be read or verified (" + s.Detail + "); inspect it, prune never removes it"
			continue
		case BackupUnfinished:
			out[i].Why = "kept: its run was cut off (" + s.Detail + ")"
			if why := replacementUnderWay(s.Path); why != "" {
				out[i].Why = "kept: " + why
			}
			continue
		}
		b, err := ReadBackup(s.Path)
		if err != nil {
			out[i].Why = "kept: it cannot be read (" + firstLine(err.Error()) + ")"
			continue
		}
		out[i].Action = b.Action
		out[i].Cluster = b.KubeSystemUID
		if out[i].Cluster == "" {
			out[i].Cluster = b.ClusterID
		}
		if out[i].Cluster == "" {
			// Backups whose cluster is not known cannot be told apart: one
			// may be the only backup of its cluster.
			out[i].Why = "kept: it does not record which cluster it was taken from, so it may be the newest of its cluster"
			continue
		}
		out[i].audit = auditSize(s.Path)
		out[i].snap = b.Snapshot != nil
		out[i].etcdID, out[i].revision = b.ClusterID, max(b.ScanRevision, s.SnapshotRevision)
		if why := snapshotFault(s.Path, b, o.VerifySnapshot); why != "" {
			out[i].Why = "kept: its snapshot " + why + "; inspect it, it does not count as a verified backup"
			continue
		}
		if why, err := undoNeeds(s.Path, b); err != nil || why != "" {
			if err != nil {
				why = "its audit log cannot be read (" + firstLine(err.Error()) + ")"
			}
			out[i].Why = "kept: " + why
			continue
		}
		byCluster[out[i].Cluster] = append(byCluster[out[i].Cluster], i)
	}
	for cluster, idx := range byCluster {
		newest(out, idx)
		newestSnap := slices.IndexFunc(idx, func(i int) bool { return out[i].snap })
		for n, i := range idx {
			switch {
			case n == 0:
				out[i].Why = "kept: the newest verified backup of cluster " + orUnknown(cluster)
			case n == newestSnap:
				// Backups of dangling and unstick hold no snapshot: the
				// newest full snapshot of the cluster stays whatever --keep.
				out[i].Why = "kept: the newest verified snapshot of cluster " + orUnknown(cluster)
			case n < keep:
				out[i].Why = fmt.Sprintf("kept: among the %s of cluster %s", newestKept(keep), orUnknown(cluster))
			case o.OlderThan > 0 && o.Now.Sub(out[i].Created) < o.OlderThan:
				out[i].Why = "kept: younger than " + o.OlderThan.String()
			default:
				out[i].Remove = true
				out[i].Why = fmt.Sprintf("removed: beyond the %s of cluster %s", newestKept(keep), orUnknown(cluster))
				if o.OlderThan > 0 {
					out[i].Why += " and older than " + o.OlderThan.String()
				}
				out[i].Why += undoLost(out[i].Path)
			}
		}
	}
	return out, nil
}

// snapshotFault says what is wrong with the snapshot the backup in dir
// recorded, or "": it is missing, has another size than recorded, or does
// not verify (or verifies as another file than recorded).
func snapshotFault(dir string, b *Backup, verify func(string) (*SnapshotInfo, error)) string {
	if b.Snapshot == nil {
		return ""
	}
	path := filepath.Join(dir, filepath.Base(b.Snapshot.Path))
	st, err := os.Stat(path)
	switch {
	case err != nil:
		return "is missing (" + firstLine(err.Error()) + ")"
	case b.Snapshot.Size > 0 && st.Size() != b.Snapshot.Size:
		return fmt.Sprintf("is %d bytes, not the %d recorded (truncated?)", st.Size(), b.Snapshot.Size)
	case verify == nil:
		return ""
	}
	info, err := verify(path)
	switch {
	case err != nil:
		return "does not verify (" + firstLine(err.Error()) + ")"
	case b.Snapshot.SHA256 != "" && info.SHA256 != b.Snapshot.SHA256:
		return "is not the one recorded (sha256 " + info.SHA256 + ", recorded " + b.Snapshot.SHA256 + ")"
	}
	return ""
}

func orUnknown(s string) string {
	if s == "" {
		return "(identity not recorded)"
	}
	return s
}

// undoNeeds says why an undo still needs the backup in dir, or "": a
// recovery whose keys were written and not undone (its undo deletes what its
// audit log says it wrote), or an undo that stopped partway.
func undoNeeds(dir string, b *Backup) (string, error) {
	data, err := os.ReadFile(filepath.Join(dir, AuditFile))
	if err != nil && !os.IsNotExist(err) {
		return "", fmt.Errorf("read audit log: %w", err)
	}
	written := map[string]bool{}
	undone := map[string]bool{}
	undoSeen := false
	for _, line := range strings.Split(string(data), "\n") {
		var r AuditRecord
		if json.Unmarshal([]byte(line), &r) != nil || r.Outcome == "" || r.Outcome == etcdwrite.NotAttempted {
			continue
		}
		if undoActions[r.Action] {
			undoSeen = true
			undone[r.Key] = true
			continue
		}
		if r.Outcome == etcdwrite.Recovered {
			written[r.Key] = true
		}
	}
	if b.Action == ActionRecover && len(written) > 0 && !undoSeen {
		return fmt.Sprintf("the recovery wrote %s and was not undone: its undo (regghost restore %s) reads this backup's audit log", plural.Of(len(written), "key"), dir), nil
	}
	if undoSeen {
		for _, e := range b.Entries {
			if e.Role == "" && !undone[e.Key] && (b.Action != ActionRecover || written[e.Key]) {
				return "its undo stopped partway (" + e.Key + " has no outcome): run it again before removing it", nil
			}
		}
	}
	return "", nil
}

// undoLost says what removing the backup in dir takes away: the only undo
// of the write it backed up, unless a restore put it back already.
func undoLost(dir string) string {
	b, err := ReadBackup(dir)
	if err != nil {
		return ""
	}
	data, _ := os.ReadFile(filepath.Join(dir, AuditFile))
	written, undone := map[string]bool{}, map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		var r AuditRecord
		if json.Unmarshal([]byte(line), &r) != nil {
			continue
		}
		switch {
		case undoActions[r.Action] && undoOutcomes[r.Outcome]:
			undone[r.Key] = true
		case !undoActions[r.Action] && writeOutcomes[r.Outcome]:
			written[r.Key] = true
		}
	}
	left := 0
	for k := range written {
		if !undone[k] {
			left++
		}
	}
	switch {
	case len(written) == 0:
		return "; it records no change to undo"
	case left == 0:
		return "; its write was undone already"
	}
	what := b.Action
	if what == "" {
		what = "purge"
	}
	if b.Scope != "" {
		what += " of " + b.Scope
	}
	return fmt.Sprintf("; it is the only undo of its %s (%d keys written): once it goes, regghost restore cannot put them back (the cluster's newest verified backup and snapshot stay)", what, left)
}

// writeOutcomes are the outcomes of a key a write changed; undoOutcomes
// those of a key an undo put back (a refusal, a conflict or a key left as
// it is undid nothing).
var (
	writeOutcomes = map[etcdwrite.Outcome]bool{etcdwrite.Deleted: true, etcdwrite.Recovered: true, etcdwrite.Unverified: true,
		etcdwrite.Rewritten: true, etcdwrite.FinalizersRemoved: true}
	undoOutcomes = map[etcdwrite.Outcome]bool{etcdwrite.Restored: true, etcdwrite.RestoredWithoutVolume: true, etcdwrite.AlreadyPresent: true,
		etcdwrite.Deleted: true}
)

// auditSize is the size of dir's audit log (0 when it has none).
func auditSize(dir string) int64 {
	st, err := os.Stat(filepath.Join(dir, AuditFile))
	if err != nil {
		return 0
	}
	return st.Size()
}

// stillRemovable says why d, planned for removal, may no longer go, or "".
func stillRemovable(d PruneDecision) string {
	if auditSize(d.Path) != d.audit {
		return "its audit log changed: a restore ran"
	}
	if why := replacementUnderWay(d.Path); why != "" {
		return why
	}
	b, err := ReadBackup(d.Path)
	if err != nil {
		return "it can no longer be read: " + firstLine(err.Error())
	}
	if n, err := Unfinished(d.Path, b); err != nil || n > 0 {
		return "its run has keys without an outcome"
	}
	if why, err := undoNeeds(d.Path, b); err != nil || why != "" {
		return "an undo needs it"
	}
	return ""
}

// dirBytes is what the files under dir take.
func dirBytes(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			n += info.Size()
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("size of %s: %w", dir, err)
	}
	return n, nil
}

// Prune removes the backups the plan marks Remove and returns the bytes
// freed; it stops at the first it cannot remove, among them one a running
// restore holds (Hold).
func Prune(plan []PruneDecision) (int64, error) {
	var freed int64
	for _, d := range plan {
		if !d.Remove {
			continue
		}
		release, err := holdToRemove(d.Path)
		if err != nil {
			return freed, fmt.Errorf("%w; it was not removed, nor any after it", err)
		}
		// Judged again under the hold: a restore that ran since the plan
		// (and perhaps stopped partway) made it one an undo needs.
		if why := stillRemovable(d); why != "" {
			release()
			return freed, fmt.Errorf("backup %s changed since the plan (%s); it was not removed, nor any after it: run prune again", d.Path, why)
		}
		err = os.RemoveAll(d.Path)
		release()
		if err != nil {
			return freed, fmt.Errorf("remove backup %s: %w", d.Path, err)
		}
		freed += d.Bytes
	}
	return freed, nil
}

// newestKept is "newest verified backup" or "N newest verified backups".
func newestKept(keep int) string {
	if keep == 1 {
		return "newest verified backup"
	}
	return fmt.Sprintf("%d newest verified backups", keep)
}

// Removals is how many backups of plan a prune removes.
func Removals(plan []PruneDecision) int {
	n := 0
	for _, d := range plan {
		if d.Remove {
			n++
		}
	}
	return n
}
