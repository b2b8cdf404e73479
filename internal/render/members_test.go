package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/regghost/regghost/internal/table"
	"github.com/regghost/regghost/pkg/members"
)

// TestMembersReplaceDiskBudget: the plan says, per filesystem, what it has
// free, what the run writes there, what is left and what must stay free,
// and what each write is, within 120 columns.
func TestMembersReplaceDiskBudget(t *testing.T) {
	const gib = int64(1) << 30
	r := &members.Replacement{Member: "m1", ID: "2", PeerURLs: []string{"http://10.0.0.2:2380"}, Stage: members.StagePlanned,
		Disk: []members.DiskBudget{{Dir: "/var/lib", Device: "253:0", Free: 44 * gib, Written: 44*gib + 128<<20, Left: -128 << 20, Reserve: 10 * gib,
			Writes: []members.DiskWrite{
				{What: "the evidence: the snapshots of m0, m1, m2, and 10% more", Path: "/var/lib/regghost/backups", Bytes: 33 * gib},
				{What: "the learner's copy of the leader's db, and 10% more", Path: "/var/lib/etcd", Bytes: 11 * gib},
				{What: "m1's data directory moved aside (a rename: nothing written, nothing freed)", Path: "/var/lib/etcd"},
			}}}}
	var out bytes.Buffer
	if err := writeMembersReplace(&table.Layout{Writer: &out, Width: 120}, r, false, true); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"/var/lib (device 253:0): 44 GiB free, 44 GiB written, -128 MiB left, 10 GiB reserve: DOES NOT FIT",
		"- the evidence: the snapshots of m0, m1, m2, and 10% more: 33 GiB (/var/lib/regghost/backups)",
		"- m1's data directory moved aside (a rename: nothing written, nothing freed): 0 B (/var/lib/etcd)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the plan misses %q:\n%s", want, got)
		}
	}
	for _, l := range strings.Split(got, "\n") {
		if table.TextWidth(l) > 120 {
			t.Errorf("a line wider than 120 columns: %q", l)
		}
	}
}
