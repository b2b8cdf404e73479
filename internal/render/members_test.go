package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/regghost/regghost/pkg/members"
	"github.com/regghost/regghost/pkg/table"
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

// TestMembersReplaceTimingAndAgain: the plan says how long the comparison
// after the promotion takes against the time each step has, and when it
// does not fit, which --command-timeout or --max-keys-per-second would;
// the way out of a run not done yet names the command as the run gave it
// (its --backup-dir among it), within 120 columns.
func TestMembersReplaceTimingAndAgain(t *testing.T) {
	const again = "regghost members replace m1 --confirm --backup-dir /srv/evidence --command-timeout 20m"
	for _, tt := range []struct {
		name string
		r    members.Replacement
		want []string
		not  []string
	}{
		{"fits", members.Replacement{Stage: members.StagePlanned,
			Timing: &members.Timing{Keys: 20000, PerSecond: 25000, Took: 1.2, Needs: 1.5, Timeout: 300, Fits: true}},
			[]string{"Time: the comparison after the promotion reads every member's keyspace again, as this one did (20000 keys on one member, at up to 25000 keys a second each",
				"it took 2s): planned at 2s with a quarter to spare, within the --command-timeout 5m each step has."},
			[]string{"DOES NOT FIT"}},
		{"does not fit", members.Replacement{Stage: members.StagePlanned,
			Timing: &members.Timing{Keys: 7_500_000, PerSecond: 25000, Took: 290, Needs: 375, Timeout: 300, FitTimeout: 420, FitPerSecond: 32000}},
			[]string{"planned at 6m15s", "more than the --command-timeout 5m each step has: DOES NOT FIT; --command-timeout 7m or --max-keys-per-second 32000 would."},
			nil},
		{"unpaced", members.Replacement{Stage: members.StagePlanned,
			Timing: &members.Timing{Keys: 9_000_000, Took: 250, Needs: 312.5, Timeout: 300, FitTimeout: 360}},
			[]string{"unpaced (--max-keys-per-second 0)", "DOES NOT FIT; --command-timeout 6m would."},
			[]string{"or --max-keys-per-second"}},
		{"waiting", members.Replacement{Stage: members.StageWaiting, LearnerID: "b1", Again: again},
			[]string{"run `" + again + "` again: it promotes it"}, []string{"Time:"}},
		{"differs", members.Replacement{Stage: members.StageDiffers, Again: again},
			[]string{"run `" + again + "` again"}, nil},
		{"replaced", members.Replacement{Stage: members.StageReplaced, Again: again, Timing: &members.Timing{Fits: true}},
			nil, []string{"Time:", again}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.r
			r.Member, r.ID, r.PeerURLs = "m1", "a1", []string{"http://10.0.0.2:2380"}
			var out bytes.Buffer
			if err := writeMembersReplace(&table.Layout{Writer: &out, Width: 120}, &r, false, true); err != nil {
				t.Fatal(err)
			}
			got := out.String()
			flat := strings.Join(strings.Fields(got), " ")
			for _, want := range tt.want {
				if !strings.Contains(flat, want) {
					t.Errorf("misses %q:\n%s", want, got)
				}
			}
			for _, not := range tt.not {
				if strings.Contains(flat, not) {
					t.Errorf("says %q:\n%s", not, got)
				}
			}
			for _, l := range strings.Split(got, "\n") {
				if table.TextWidth(l) > 120 {
					t.Errorf("a line wider than 120 columns: %q", l)
				}
			}
		})
	}
}
