package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/regghost/regghost/pkg/plural"
	"github.com/regghost/regghost/pkg/reclaim"
	"github.com/regghost/regghost/pkg/table"
)

// ReclaimPlan is space reclaim's plan (a dry run, or what --confirm is
// about to do) in every form -o can ask for; its rows are the members, in
// the order they would be defragmented.
func ReclaimPlan(p *reclaim.Plan, dryRun bool) Output {
	return Output{Doc: map[string]any{"dryRun": dryRun, "plan": p},
		Rows: RowsOf(p.Members, func(m *reclaim.Member) string { return m.Name }),
		Human: func(w io.Writer, wide, _ bool) error {
			writeReclaimPlan(w, p, wide)
			if dryRun && len(p.Refusals) == 0 {
				fmt.Fprintln(w, "\nDry run: nothing was changed. Re-run with --confirm to do the above.")
			}
			return nil
		}}
}

// WriteReclaimPlan writes the members as they are now (size, size in use,
// quota, room for the rewrite), the steps a run takes, and why it would be
// refused.
func WriteReclaimPlan(out io.Writer, p *reclaim.Plan) { writeReclaimPlan(out, p, false) }

// writeReclaimPlan is WriteReclaimPlan; wide adds what a defragmentation
// gives back now (the db size less the size in use) and each quota's source.
func writeReclaimPlan(out io.Writer, p *reclaim.Plan, wide bool) {
	if p.Advice != "" {
		table.Wrapped(out, fmt.Sprintf("%s %s: nothing to reclaim here.", p.Datastore.Name, p.Datastore.Version))
		fmt.Fprintln(out)
		table.Wrapped(out, p.Advice)
		return
	}
	head := fmt.Sprintf("etcd cluster %s, %s, revision %d", p.Datastore.ClusterID, plural.Of(len(p.Members), "member"), p.Revision)
	if alarms := alarmWords(p.Alarms); alarms != "" {
		head += ", alarm " + alarms
	} else {
		head += ", no alarm"
	}
	table.Wrapped(out, head)
	fmt.Fprintln(out)
	hdr := []string{"MEMBER", "ROLE", "HEALTHY", "DB SIZE", "IN USE", "QUOTA", "DISK FOR THE REWRITE"}
	if wide {
		hdr = []string{"MEMBER", "ROLE", "HEALTHY", "DB SIZE", "IN USE", "FRAGMENTED", "QUOTA", "QUOTA FROM", "DISK FOR THE REWRITE"}
	}
	t := table.New(out, hdr...)
	var unchecked []string
	for i := range p.Members {
		m := &p.Members[i]
		healthy, size, inUse, frag, quota, from, disk := "yes", reclaimSize(m.DBSize), reclaimSize(m.DBSizeInUse), fragmented(m), quotaSize(m.Quota), quotaFrom(m.Quota), diskCell(m)
		if !m.Healthy {
			healthy = "NO"
			if m.DBSize == 0 {
				// It said nothing: its sizes and quota are unknown.
				size, inUse, frag, quota, from, disk = "-", "-", "-", "-", "-", "-"
			}
		}
		if !m.Learner && !m.Disk.Checked {
			unchecked = append(unchecked, m.Name)
		}
		if wide {
			_ = t.Append([]string{m.Name, role(m.Leader, m.Learner), healthy, size, inUse, frag, quota, from, disk})
		} else {
			_ = t.Append([]string{m.Name, role(m.Leader, m.Learner), healthy, size, inUse, quota, disk})
		}
	}
	_ = t.Render()
	if !wide {
		if q := quotaSources(p.Members); q != "" {
			table.Wrapped(out, q)
		}
	}
	if len(unchecked) > 0 {
		table.Wrapped(out, fmt.Sprintf("Disk not checked from here: %s (data directory not on this node, or not known: --data-dir NAME=DIR); the rewrite needs about the size in use free there.",
			strings.Join(unchecked, ", ")))
	}
	for _, m := range p.Members {
		if m.Quota.Source == reclaim.QuotaAssumed && m.Healthy {
			table.Wrapped(out, fmt.Sprintf("The quota of %s is assumed to be etcd's default (pass --quota-backend-bytes if it is not): %s.", m.Name, m.Quota.Why))
		}
	}
	fmt.Fprintln(out)
	writeSteps(out, p)
	if len(p.Refusals) > 0 {
		fmt.Fprintln(out)
		fmt.Fprintln(out, "Would be refused; nothing would be done:")
		for _, r := range p.Refusals {
			table.Para(out, "  - ", "    ", r)
		}
	}
}

// quotaSources says where the quotas were read, grouped: "Quotas from the
// members' Status: cp-1, cp-2; from /metrics: cp-3".
func quotaSources(members []reclaim.Member) string {
	by := map[string][]string{}
	var order []string
	for _, m := range members {
		if !m.Healthy && m.DBSize == 0 {
			continue
		}
		f := quotaFrom(m.Quota)
		if _, ok := by[f]; !ok {
			order = append(order, f)
		}
		by[f] = append(by[f], m.Name)
	}
	var parts []string
	for _, f := range order {
		parts = append(parts, "from "+f+": "+strings.Join(by[f], ", "))
	}
	if len(parts) == 0 {
		return ""
	}
	return "Quotas " + strings.Join(parts, "; ") + "."
}

// quotaFrom says where a quota was read.
func quotaFrom(q reclaim.Quota) string {
	switch q.Source {
	case reclaim.QuotaFromStatus:
		return "the member's Status"
	case reclaim.QuotaFromMetrics:
		return "the member's /metrics"
	case reclaim.QuotaFromFlag:
		return "--quota-backend-bytes"
	case reclaim.QuotaAssumed:
		return "etcd's default (assumed)"
	}
	return q.Source
}

// writeSteps says what a run does, in order.
func writeSteps(out io.Writer, p *reclaim.Plan) {
	fmt.Fprintln(out, "With --confirm, reclaim:")
	s := p.Snapshot
	table.Para(out, "  1. ", "     ", fmt.Sprintf("saves a verified snapshot into a new directory under %s (about %s; %s free there);",
		s.Root, reclaimSize(int64(s.Need)), reclaimSize(int64(s.Free))))
	table.Para(out, "  2. ", "     ", "compacts at the snapshot's revision: `regghost history` and `recover --rev` then end there for every earlier revision; "+
		"`recover --snapshot` and `history --db` on the snapshot keep those readable;")
	var voters []string
	leader := ""
	for _, m := range p.Members {
		switch {
		case m.Learner:
		case m.Leader:
			leader = m.Name
		default:
			voters = append(voters, m.Name)
		}
	}
	step := "defragments " + strings.Join(voters, ", ")
	switch {
	case len(voters) == 0:
		step = "defragments " + leader + ", the only member (etcd serves nothing while it is rewritten), and waits for it to come back healthy;"
	default:
		if leader != "" {
			step += ", then " + leader + " (the leader) last"
		}
		step += ", one at a time, each only while every member is healthy, and waits for each to come back healthy; it stops at the first that does not;"
	}
	table.Para(out, "  3. ", "     ", step)
	table.Para(out, "  4. ", "     ", "disarms NOSPACE if every member is then below its quota.")
}

// ReclaimStep writes one step of a run as it happens.
func ReclaimStep(out io.Writer, s reclaim.Step) {
	res := s.Result
	switch s.Kind {
	case reclaim.StepSnapshot:
		Snapshot(out, "Snapshot from "+res.SnapshotEndpoint+" saved at ", res.Snapshot)
	case reclaim.StepCompacted:
		c := res.Compaction
		if c.Already {
			table.Wrapped(out, fmt.Sprintf("Already compacted at or past revision %d (the snapshot's): nothing older is held.", c.Revision))
		} else {
			table.Wrapped(out, fmt.Sprintf("Compacted at revision %d (the snapshot's): older revisions are readable only from the snapshot now.", c.Revision))
		}
	case reclaim.StepDefragmenting:
		m := s.Member
		table.Wrapped(out, fmt.Sprintf("Defragmenting %s (%s, %s, %s in use)...", m.Name, role(m.Leader, m.Learner), reclaimSize(m.Before), reclaimSize(m.BeforeInUse)))
	case reclaim.StepDefragmented:
		m := s.Member
		table.Wrapped(out, fmt.Sprintf("Defragmented %s: %s -> %s in %.1fs; it is healthy again.", m.Name, reclaimSize(m.Before), reclaimSize(m.After), m.Seconds))
	}
}

// ReclaimResult is a finished (or stopped) run in every form -o can ask
// for; its rows are the members with their outcome.
func ReclaimResult(res *reclaim.Result) Output {
	return Output{Doc: res, Rows: RowsOf(res.Members, func(m *reclaim.MemberResult) string { return m.Name }),
		Human: func(out io.Writer, _, _ bool) error {
			WriteReclaimResult(out, res)
			return nil
		}}
}

// WriteReclaimResult writes each member's sizes before and after and its
// outcome, where the run stopped, and what became of NOSPACE.
func WriteReclaimResult(out io.Writer, res *reclaim.Result) {
	if res.Snapshot == nil {
		// Refused: the plan says why.
		writeReclaimPlan(out, res.Plan, false)
		return
	}
	fmt.Fprintln(out)
	if len(res.Members) > 0 {
		t := table.New(out, "MEMBER", "ROLE", "BEFORE", "AFTER", "QUOTA", "OUTCOME")
		for _, m := range res.Members {
			after, outcome := "-", m.Outcome
			switch m.Outcome {
			case reclaim.Defragmented:
				after, outcome = reclaimSize(m.After), fmt.Sprintf("defragmented in %.1fs", m.Seconds)
			case reclaim.Failed, reclaim.Skipped:
				outcome += ": " + m.Why
			}
			_ = t.Append([]string{m.Name, role(m.Leader, m.Learner), reclaimSize(m.Before), after, quotaSize(m.Quota), outcome})
		}
		_ = t.Render()
		fmt.Fprintln(out)
	}
	if s := res.Stop; s != nil {
		table.Wrapped(out, fmt.Sprintf("Stopped at member %s: %s.", s.Member, s.Why))
		table.Wrapped(out, fmt.Sprintf("Defragmented: %s. Not defragmented: %s. NOSPACE was not disarmed.", listOrNone(s.Done), listOrNone(s.NotDone)))
	}
	if d := res.Disarm; d != nil {
		switch {
		case d.Disarmed:
			table.Wrapped(out, fmt.Sprintf("NOSPACE disarmed (raised by %s): every member is below its quota, and etcd accepts writes again.", raisers(d.Alarms)))
		case len(d.Alarms) == 0:
			table.Wrapped(out, "No NOSPACE alarm is raised: nothing to disarm.")
		default:
			table.Wrapped(out, "NOSPACE left raised: "+d.Why+".")
		}
		if len(d.Near) > 0 {
			table.Wrapped(out, fmt.Sprintf("Still above %d%% of the quota: %s; the alarm comes back with the next growth.", 80, strings.Join(d.Near, ", ")))
		}
	}
	table.Wrapped(out, fmt.Sprintf("The keyspace before the compaction is in %s (revision %d): regghost recover --snapshot and history --db read it.",
		res.Snapshot.Path, res.Snapshot.Revision))
}

// role names a member's role.
func role(leader, learner bool) string {
	switch {
	case learner:
		return "learner"
	case leader:
		return "leader"
	}
	return "follower"
}

// fragmented is what a defragmentation gives back, with its share of the file.
func fragmented(m *reclaim.Member) string {
	f := m.Fragmented()
	if m.DBSize <= 0 {
		return reclaimSize(f)
	}
	return fmt.Sprintf("%s (%d%%)", reclaimSize(f), f*100/m.DBSize)
}

// quotaSize is a quota's size, "none" for no quota.
func quotaSize(q reclaim.Quota) string {
	if q.Bytes < 0 {
		return "none"
	}
	return reclaimSize(q.Bytes)
}

// diskCell says whether the member's disk holds its rewrite.
func diskCell(m *reclaim.Member) string {
	d := m.Disk
	switch {
	case m.Learner:
		return "-"
	case !d.Checked && d.DataDir != "":
		return "not checked: " + d.Why
	case !d.Checked:
		return "not checked"
	case d.Fits:
		return fmt.Sprintf("fits: %s of %s free", reclaimSize(int64(d.Need)), reclaimSize(int64(d.Free)))
	}
	return fmt.Sprintf("DOES NOT FIT: %s of %s free, %s to keep", reclaimSize(int64(d.Need)), reclaimSize(int64(d.Free)), reclaimSize(int64(d.Keep)))
}

// raisers names the members that raised alarms.
func raisers(alarms []reclaim.Alarm) string {
	var out []string
	for _, a := range alarms {
		if a.Member != "" {
			out = append(out, a.Member)
		} else {
			out = append(out, a.MemberID)
		}
	}
	return strings.Join(out, ", ")
}

// alarmWords names alarms: "NOSPACE raised by m0, m1".
func alarmWords(alarms []reclaim.Alarm) string {
	byType := map[string][]string{}
	var types []string
	for _, a := range alarms {
		if _, ok := byType[a.Type]; !ok {
			types = append(types, a.Type)
		}
		name := a.Member
		if name == "" {
			name = a.MemberID
		}
		byType[a.Type] = append(byType[a.Type], name)
	}
	var out []string
	for _, t := range types {
		out = append(out, fmt.Sprintf("%s raised by %s", t, strings.Join(byType[t], ", ")))
	}
	return strings.Join(out, "; ")
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// reclaimSize writes a size in bytes for a person: B, KiB, MiB or GiB.
func reclaimSize(n int64) string {
	switch {
	case n < 0:
		return "-" + reclaimSize(-n)
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
}
