package backup

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/regghost/regghost/pkg/etcdwrite"
)

// AuditFile is the append-only log beside each backup.
const AuditFile = "audit.log"

// AuditRecord is one line of the audit log.
type AuditRecord struct {
	Time    time.Time         `json:"time"`
	Action  string            `json:"action"`
	Key     string            `json:"key"`
	Outcome etcdwrite.Outcome `json:"outcome"`
	Detail  string            `json:"detail,omitempty"`
	// Revision is the revision the key was written at (Result.Revision).
	Revision int64 `json:"revision,omitempty"`
}

// AppendAudit appends one JSON line per result to dir/audit.log and fsyncs it.
func AppendAudit(dir, action string, results []etcdwrite.Result) error {
	if len(results) == 0 {
		return CheckAudit(dir)
	}
	path := filepath.Join(dir, AuditFile)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open audit log: %w", err)
	}
	enc := json.NewEncoder(f)
	now := time.Now().UTC()
	for _, r := range results {
		if err := enc.Encode(AuditRecord{Time: now, Action: action, Key: r.Key, Outcome: r.Outcome, Detail: r.Detail, Revision: r.Revision}); err != nil {
			f.Close()
			return fmt.Errorf("write audit log %s: %w", path, err)
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("fsync audit log %s: %w", path, err)
	}
	return f.Close()
}

// undoActions are the audit log's actions that put a backup back, written
// into the backup's own log.
var undoActions = map[string]bool{"restore": true, "undo-recover": true}

// Unfinished counts the keys a purge was to delete that have no outcome in
// its audit log: a purge killed or cut off half-way. It reads dir's backup
// b and audit log.
func Unfinished(dir string, b *Backup) (int, error) {
	want := map[string]bool{}
	for _, e := range b.Entries {
		if e.Role == "" {
			want[e.Key] = true
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, AuditFile))
	if err != nil && !os.IsNotExist(err) {
		return 0, fmt.Errorf("read audit log: %w", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		var r AuditRecord
		// A restore's lines in the same log say what became of the keys
		// put back, not of the run that made the backup.
		if json.Unmarshal([]byte(line), &r) == nil && r.Outcome != etcdwrite.NotAttempted && r.Outcome != "" && !undoActions[r.Action] {
			delete(want, r.Key)
		}
	}
	return len(want), nil
}

// Written reads dir's audit log for the revision each key was last written
// at by an action's outcome (a recovery's recovered keys): what an undo may
// delete, and at which revision. A key whose last outcome for the action
// is not one of outcomes is not in the map.
func Written(dir, action string, outcomes ...etcdwrite.Outcome) (map[string]int64, error) {
	data, err := os.ReadFile(filepath.Join(dir, AuditFile))
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("read audit log: %w", err)
	}
	out := map[string]int64{}
	for _, line := range strings.Split(string(data), "\n") {
		var r AuditRecord
		if json.Unmarshal([]byte(line), &r) != nil || r.Action != action {
			continue
		}
		if r.Revision != 0 && slices.Contains(outcomes, r.Outcome) {
			out[r.Key] = r.Revision
		} else if r.Outcome != etcdwrite.NotAttempted {
			delete(out, r.Key)
		}
	}
	return out, nil
}

// CheckAudit checks the audit log in dir can be appended to, before a
// write that journals there: a write that cannot be recorded could not be
// undone.
func CheckAudit(dir string) error {
	path := filepath.Join(dir, AuditFile)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open audit log: %w", err)
	}
	return f.Close()
}

// auditActions are the distinct actions of dir's audit log, in the order
// first seen; none when it cannot be read.
func auditActions(dir string) []string {
	data, err := os.ReadFile(filepath.Join(dir, AuditFile))
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		var r AuditRecord
		if json.Unmarshal([]byte(line), &r) == nil && r.Action != "" && !slices.Contains(out, r.Action) {
			out = append(out, r.Action)
		}
	}
	return out
}
