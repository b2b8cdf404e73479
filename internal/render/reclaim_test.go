package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/reclaim"
	"github.com/regghost/regghost/pkg/table"
)

func reclaimPlan() *reclaim.Plan {
	q := reclaim.Quota{Bytes: 8 << 30, Source: reclaim.QuotaFromStatus}
	return &reclaim.Plan{Datastore: etcdwrite.Datastore{Name: "etcd", ClusterID: "cdf818194e3a8c32"}, Revision: 912345,
		Alarms: []reclaim.Alarm{{Member: "cp-1", MemberID: "8e9e05c52164694d", Type: "NOSPACE"}},
		Members: []reclaim.Member{
			{Name: "cp-2", Healthy: true, DBSize: 8 << 30, DBSizeInUse: 6 << 30, Quota: q, Disk: reclaim.Disk{Why: "not on this node"}},
			{Name: "cp-3", Problem: "it does not answer Status: context deadline exceeded"},
			{Name: "cp-1", Healthy: true, Leader: true, DBSize: 8 << 30, DBSizeInUse: 6 << 30, Quota: q,
				Disk: reclaim.Disk{DataDir: "/var/lib/etcd", Checked: true, Fits: true, Need: 6758 << 20, Free: 40 << 30}},
		},
		Snapshot: reclaim.SnapshotPlan{Root: "/var/lib/regghost/backups", Need: 9 << 30, Free: 40 << 30, Fits: true},
		Refusals: []string{"member cp-3 (https://10.0.0.13:2379) is not healthy: it does not answer Status: context deadline exceeded"}}
}

// TestReclaimPlan: the plan names the order (the leader last), shows a
// member that says nothing without sizes, which disks are not checked, and
// the refusal; at 80 columns too.
func TestReclaimPlan(t *testing.T) {
	for _, width := range []int{table.MaxWidth, 80} {
		var buf bytes.Buffer
		if err := ReclaimPlan(reclaimPlan(), true).Human(&table.Layout{Writer: &buf, Width: width}, false, false); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		flat := strings.Join(strings.Fields(out), " ")
		for _, want := range []string{
			"etcd cluster cdf818194e3a8c32, 3 members, revision 912345, alarm NOSPACE raised by cp-1",
			"cp-3 follower NO - - - -",
			"cp-1 leader yes 8.0 GiB 6.0 GiB 8.0 GiB fits: 6.6 GiB of 40.0 GiB",
			"Quotas from the member's Status: cp-2, cp-1.",
			"Disk not checked from here: cp-2, cp-3",
			"defragments cp-2, cp-3, then cp-1 (the leader) last, one at a time",
			"Would be refused; nothing would be done: - member cp-3 (https://10.0.0.13:2379) is not healthy",
		} {
			if !strings.Contains(flat, want) {
				t.Errorf("width %d: plan misses %q:\n%s", width, want, out)
			}
		}
		if strings.Contains(out, "Dry run") {
			t.Errorf("a refused plan says it would run:\n%s", out)
		}
		for _, l := range strings.Split(out, "\n") {
			if table.TextWidth(l) > width {
				t.Errorf("width %d: line of %d columns: %q", width, table.TextWidth(l), l)
			}
		}
	}
}

func TestReclaimResult(t *testing.T) {
	p := reclaimPlan()
	q := p.Members[0].Quota
	snap := &backup.SnapshotInfo{Path: "/var/lib/regghost/backups/20261204T101500Z-reclaim/snapshot.db", Revision: 912345}
	for _, tc := range []struct {
		name string
		res  reclaim.Result
		want []string
	}{
		{"disarmed", reclaim.Result{Plan: p, Snapshot: snap, Members: []reclaim.MemberResult{
			{Name: "cp-2", Outcome: reclaim.Defragmented, Before: 8 << 30, After: 3 << 30, Seconds: 41.2, Quota: q},
			{Name: "cp-1", Leader: true, Outcome: reclaim.Defragmented, Before: 8 << 30, After: 3 << 30, Seconds: 40.7, Quota: q}},
			Disarm: &reclaim.Disarm{Disarmed: true, Alarms: p.Alarms}},
			[]string{"cp-1 leader 8.0 GiB 3.0 GiB 8.0 GiB defragmented in 40.7s",
				"NOSPACE disarmed (raised by cp-1): every member is below its quota, and etcd accepts writes again.",
				"The keyspace before the compaction is in /var/lib/regghost/backups/20261204T101500Z-reclaim/snapshot.db (revision 912345)"}},
		{"stopped", reclaim.Result{Plan: p, Snapshot: snap, Members: []reclaim.MemberResult{
			{Name: "cp-2", Outcome: reclaim.Failed, Why: "it did not come back healthy within 1m0s: it knows no leader", Before: 8 << 30, Quota: q},
			{Name: "cp-1", Leader: true, Outcome: reclaim.NotReached, Before: 8 << 30, Quota: q}},
			Stop: &reclaim.Stop{Member: "cp-2", Why: "it did not come back healthy within 1m0s: it knows no leader", Done: []string{}, NotDone: []string{"cp-2", "cp-1"}}},
			[]string{"cp-2 follower 8.0 GiB - 8.0 GiB failed: it did not come back healthy",
				"cp-1 leader 8.0 GiB - 8.0 GiB not-reached",
				"Stopped at member cp-2: it did not come back healthy within 1m0s: it knows no leader.",
				"Defragmented: none. Not defragmented: cp-2, cp-1. NOSPACE was not disarmed."}},
		{"left raised", reclaim.Result{Plan: p, Snapshot: snap, Members: []reclaim.MemberResult{},
			Disarm: &reclaim.Disarm{Alarms: p.Alarms, Why: "not every member is below its quota: cp-1 (8800000000 of 8589934592 bytes)"}},
			[]string{"NOSPACE left raised: not every member is below its quota: cp-1 (8800000000 of 8589934592 bytes)."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := ReclaimResult(&tc.res).Human(&table.Layout{Writer: &buf, Width: table.MaxWidth}, false, false); err != nil {
				t.Fatal(err)
			}
			flat := strings.Join(strings.Fields(buf.String()), " ")
			for _, want := range tc.want {
				if !strings.Contains(flat, want) {
					t.Errorf("result misses %q:\n%s", want, buf.String())
				}
			}
		})
	}
}
