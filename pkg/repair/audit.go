package repair

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// AuditFile is the append-only log beside each backup.
const AuditFile = "audit.log"

// AuditRecord is one line of the audit log.
type AuditRecord struct {
	Time    time.Time `json:"time"`
	Action  string    `json:"action"`
	Key     string    `json:"key"`
	Outcome Outcome   `json:"outcome"`
	Detail  string    `json:"detail,omitempty"`
}

// AppendAudit appends one JSON line per result to dir/audit.log and fsyncs it.
func AppendAudit(dir, action string, results []Result) error {
	path := filepath.Join(dir, AuditFile)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open audit log: %w", err)
	}
	enc := json.NewEncoder(f)
	now := time.Now().UTC()
	for _, r := range results {
		if err := enc.Encode(AuditRecord{Time: now, Action: action, Key: r.Key, Outcome: r.Outcome, Detail: r.Detail}); err != nil {
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
