package render

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/regghost/regghost/pkg/dbfile"
	"github.com/regghost/regghost/pkg/etcdmembers"
	"github.com/regghost/regghost/pkg/space"
	"github.com/regghost/regghost/pkg/table"
)

// spaceReport is a live report of an etcd out of space: three members (one
// with its quota given, one unreachable), NOSPACE raised, twelve resources,
// ghosts in one namespace, history bounded.
func spaceReport() *space.Report {
	r := &space.Report{Source: "etcd", Prefix: "/registry/", Revision: 4812, CompactRevision: 4700,
		Total:  space.Usage{Keys: 1200, Bytes: 60 << 20, HistoryRevisions: 10, HistoryRevisionsMax: 40, HistoryBytes: 1 << 20, HistoryBytesMax: 3 << 20},
		Ghosts: space.Usage{Keys: 480, Bytes: 58 << 20},
		Members: []space.Member{
			{Member: etcdmembers.Member{Name: "etcd-a", ID: "a", DBSize: 64 << 20, DBSizeInUse: 62 << 20, Leader: true, LeaderKnown: true},
				Fragmented: 2 << 20, Quota: 64 << 20, QuotaSource: space.QuotaFromStatus},
			{Member: etcdmembers.Member{Name: "etcd-b", ID: "b", DBSize: 63 << 20, DBSizeInUse: 63 << 20, LeaderKnown: true}, Quota: 64 << 20, QuotaSource: space.QuotaFromFlag},
			{Member: etcdmembers.Member{Name: "etcd-c", ID: "c", Unreachable: "context deadline exceeded"}},
		},
		Alarms:  []space.Alarm{{Member: "etcd-a", ID: "a", Alarm: "NOSPACE"}},
		Classes: []space.ClassGroup{{Class: "orphaned-namespace", Ghost: true, Usage: space.Usage{Keys: 480, Bytes: 58 << 20}, Namespaces: []string{"ghosttown"}}},
		Namespaces: []space.Group{
			{Name: "ghosttown", Usage: space.Usage{Keys: 480, Bytes: 58 << 20}, Ghost: space.Usage{Keys: 480, Bytes: 58 << 20}},
			{Name: "shop", Usage: space.Usage{Keys: 20, Bytes: 1 << 20, HistoryRevisions: 10, HistoryRevisionsMax: 40, HistoryBytes: 1 << 20, HistoryBytesMax: 3 << 20}},
		},
		LargestKeys:   []space.KeySize{{Key: "/registry/configmaps/ghosttown/big-000", Resource: "configmaps", Namespace: "ghosttown", Bytes: 1 << 20}},
		MostRevisions: []space.KeyRevisions{{Key: "/registry/leases/shop/leader", Revisions: 2, RevisionsMax: 31, Bytes: 9000}, {Key: "/registry/pods/shop/p", Revisions: 1}},
	}
	for i := range 12 {
		r.Resources = append(r.Resources, space.Group{Name: fmt.Sprintf("resource-%02d", i), Usage: space.Usage{Keys: 100, Bytes: int64(12-i) << 20}})
	}
	r.Estimates = space.Estimates{PurgeGhosts: r.Ghosts, Compaction: space.Usage{HistoryRevisions: 10, HistoryRevisionsMax: 40, HistoryBytes: 1 << 20, HistoryBytesMax: 3 << 20},
		Defragmentation: 2 << 20}
	return r
}

func humanSpace(t *testing.T, r *space.Report, wide bool) string {
	t.Helper()
	var b bytes.Buffer
	if err := Space(r).Human(&table.Layout{Writer: &b, Width: 120, Full: wide}, wide, false); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestSpaceHuman: what a person reads at a glance, live and from a file.
func TestSpaceHuman(t *testing.T) {
	file := &space.Report{Source: "/tmp/db", File: &dbfile.Info{Path: "/tmp/db"}, ExactHistory: true, Revision: 77,
		Total:         space.Usage{Keys: 2, Bytes: 2048, HistoryRevisions: 3, Tombstones: 1, HistoryBytes: 300, DeletedKeys: 1},
		Pages:         &space.Pages{PageSize: 4096, FileSize: 16 << 20, InUse: 12 << 20, Fragmented: 4 << 20},
		MostRevisions: []space.KeyRevisions{{Key: "/registry/namespaces/gone", Revisions: 2, Tombstones: 1, Bytes: 100, Deleted: true}}}
	file.Estimates.Compaction = space.Usage{HistoryRevisions: 3, Tombstones: 1, HistoryBytes: 300}
	file.Estimates.Defragmentation = 4 << 20
	tests := []struct {
		name    string
		r       *space.Report
		wide    bool
		want    []string
		notWant []string
	}{
		{"live", spaceReport(), false, []string{
			"Space of etcd at revision 4812 (compacted at 4700).",
			"etcd-a  64 MiB   62 MiB  2.0 MiB (3.1%)  64 MiB          100%       NOSPACE  leader",
			"etcd-b  63 MiB   63 MiB  0 B (0%)        64 MiB (given)  98%        -        follower",
			"etcd-c  ?        ?       ?               ?               ?          -        unreachable: context deadline exceeded",
			"Alarm NOSPACE is raised on etcd-a: etcd refuses every put",
			"History held since the last compaction: 10–40 revisions, 1.0 MiB–3.0 MiB.",
			"Ghosts hold 480 keys: 58 MiB of values (97%)",
			"resource-00  100   12 MiB   0 B      19%    -",
			"… and 2 more (3.0 MiB, 4.8%): -o wide lists them all",
			"ghosttown  480   58 MiB   0 B        92%    58 MiB",
			"shop       20    1.0 MiB  ≤ 3.0 MiB  6.3%   -",
			"orphaned-namespace  yes    480   58 MiB  0 B      92%    ghosttown",
			"/registry/leases/shop/leader  2–31       ?        ≤ 8.8 KiB  exists",
			"a purge of the 480 ghosts would free about 58 MiB",
			"a compaction at revision 4812 would free at least 1.0 MiB–3.0 MiB of history (10–40 revisions;",
		}, []string{"/registry/pods/shop/p", "resource-11", "of them deletes"}},
		{"live, wide", spaceReport(), true, []string{"resource-11", "REVISIONS  DELETES  HISTORY"}, []string{"… and"}},
		{"file", file, false, []string{
			"Space of db file /tmp/db at revision 77 (never compacted).",
			"The file is 16 MiB: 12 MiB in use, 4.0 MiB free (25% fragmented), which a defragmentation gives back.",
			"History held since the last compaction: 3 revisions (1 of them deletes), 300 B.", "key no longer exists but has revisions held.",
			"/registry/namespaces/gone  2          1        100 B  deleted",
			"no ghost to purge;",
			"a compaction at revision 77 would free about 300 B of history (3 revisions, 1 of them deletes)",
			"a defragmentation gives back the file's fragmented pages now (4.0 MiB)",
		}, []string{"MEMBER", "Live, etcd says no revision count"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := humanSpace(t, tt.r, tt.wide)
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(out, w) {
					t.Errorf("output has %q:\n%s", w, out)
				}
			}
			if tt.wide {
				return
			}
			for _, l := range strings.Split(out, "\n") {
				if table.TextWidth(l) > 120 {
					t.Errorf("line wider than 120 columns: %q", l)
				}
			}
		})
	}
}

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 10 << 20: "10 MiB", 3 << 30: "3.0 GiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}
