package migrate

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/regghost/regghost/pkg/backup"
)

// TestInBackups: a backup holding values of the resource under an old key,
// or whose snapshot predates the count, is named; one holding other
// resources only, or values under the key that writes, is not; a missing
// root holds nothing.
func TestInBackups(t *testing.T) {
	root := t.TempDir()
	write := func(name string, snapRev int64, entries ...backup.Entry) {
		dir := filepath.Join(root, name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		b := &backup.Backup{Prefix: "/registry/", Entries: entries}
		if snapRev > 0 {
			b.Snapshot = &backup.SnapshotInfo{Revision: snapRev}
		}
		if _, _, err := backup.WriteBackup(dir, b); err != nil {
			t.Fatal(err)
		}
	}
	write("a-old-key", 0, backup.Entry{Key: "/registry/secrets/ns/a", Value: []byte("k8s:enc:aescbc:v1:key1:x")},
		backup.Entry{Key: "/registry/secrets/ns/b", Value: []byte("k8s:enc:aescbc:v1:key2:x")})
	write("b-other-resource", 0, backup.Entry{Key: "/registry/configmaps/ns/a", Value: []byte("k8s:enc:aescbc:v1:key1:x")})
	write("c-write-key", 0, backup.Entry{Key: "/registry/secrets/ns/c", Value: []byte("k8s:enc:aescbc:v1:key2:x")})
	write("d-old-snapshot", 40, backup.Entry{Key: "/registry/secrets/ns/d", Value: []byte("k8s:enc:aescbc:v1:key2:x")})
	write("e-new-snapshot", 60, backup.Entry{Key: "/registry/secrets/ns/e", Value: []byte("k8s:enc:aescbc:v1:key2:x")})
	c := &Census{Target: Target{Resource: schema.GroupResource{Resource: "secrets"}, Prefix: "secrets"}, Writer: "aescbc/key2", Revision: 50}
	if held, err := InBackups(root, c, false); err != nil || len(held) != 1 {
		t.Errorf("not rotated: a snapshot-only backup named: %+v, %v", held, err)
	}
	held, err := InBackups(root, c, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(held) != 2 || filepath.Base(held[0].Path) != "a-old-key" || held[0].ByKey["aescbc/key1"] != 1 || len(held[0].ByKey) != 1 ||
		filepath.Base(held[1].Path) != "d-old-snapshot" || held[1].SnapshotRevision != 40 {
		t.Errorf("held %+v", held)
	}
	if held, err := InBackups(filepath.Join(root, "none"), c, true); err != nil || held != nil {
		t.Errorf("missing root: %v, %v", held, err)
	}
}
