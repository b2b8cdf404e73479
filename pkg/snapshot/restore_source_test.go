package snapshot

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/etcdwrite"
)

// TestRestoreSource: what snapshot restore writes back from a logical
// snapshot, and its refusals, each one line saying nothing was restored:
// without its purge's backup beside it only with all (every key absent
// now); no key under the prefix; no file.
func TestRestoreSource(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	etcdtest.Put(t, cli, "/registry/secrets/x/s", "s")
	etcdtest.Put(t, cli, "/registry/configmaps/x/c", "c")
	path := filepath.Join(t.TempDir(), LogicalSnapshotFile)
	if _, err := SaveLogical(context.Background(), cli, etcdwrite.Datastore{Name: "etcd"}, path, 0); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, path, prefix string
		all                bool
		keys               int
		refused            string
	}{
		{name: "every key absent now", path: path, prefix: "/registry/", all: true, keys: 2},
		{name: "no purge backup beside it", path: path, prefix: "/registry/", refused: AllAbsentFlag + " writes back every key"},
		{name: "no key under the prefix", path: path, prefix: "/registry/pods/", all: true, refused: `holds no key under "/registry/pods/"`},
		{name: "no file", path: path + ".gone", prefix: "/registry/", all: true, refused: "no such file"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, release, err := RestoreSource(tt.path, tt.prefix, tt.all)
			if tt.refused != "" {
				if err == nil || !strings.Contains(err.Error(), tt.refused) || !strings.HasSuffix(err.Error(), "nothing was restored") || strings.Contains(err.Error(), "\n") {
					t.Fatalf("err %v, want one line saying %q and that nothing was restored", err, tt.refused)
				}
				return
			}
			if err != nil || len(b.Entries) != tt.keys {
				t.Fatalf("RestoreSource: %v, %+v", err, b)
			}
			release()
		})
	}
}
