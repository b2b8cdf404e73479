package snapshot

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/backup"
)

// TestCutSnapshotWithAValidTrailerIsAnError: a snapshot cut short whose
// sha256 trailer was written again over what is left passes the checksum;
// its consistency check (bbolt's, on a goroutine of its own, where a fault
// cannot be caught) and SnapshotHolds must refuse it with one line naming
// the file, never die of SIGBUS.
func TestCutSnapshotWithAValidTrailerIsAnError(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	ctx := context.Background()
	var entries []backup.Entry
	for i := 0; i < 300; i++ {
		entries = append(entries, backup.EntryOf(etcdtest.Put(t, cli, fmt.Sprintf("/registry/configmaps/x/c%03d", i), strings.Repeat("v", 2000))))
	}
	rc, err := cli.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	whole, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	db := whole[:len(whole)-sha256.Size]
	for _, cut := range []int{len(db) / 2 / 4096 * 4096, len(db) - 4096} {
		path := filepath.Join(t.TempDir(), "cut.db")
		sum := sha256.Sum256(db[:cut])
		if err := os.WriteFile(path, append(append([]byte{}, db[:cut]...), sum[:]...), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := VerifySnapshot(path); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "truncated") {
			t.Errorf("cut at %d of %d: VerifySnapshot: %v, want the file named truncated", cut, len(db), err)
		}
		if err := SnapshotHolds(path, entries); err == nil || !strings.Contains(err.Error(), "truncated") {
			t.Errorf("cut at %d of %d: SnapshotHolds: %v, want it truncated", cut, len(db), err)
		}
	}
}
