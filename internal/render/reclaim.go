package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/regghost/regghost/internal/table"
	"github.com/regghost/regghost/pkg/reclaim"
)

// ReclaimPlan is space reclaim's plan (a dry run, or what --confirm is
// about to do) in every form -o can ask for; its rows are the members, in
// the order they would be defragmented.
func ReclaimPlan(p *reclaim.Plan, dryRun bool) Output {
	return Output{Doc: map[string]any{"dryRun": dryRun, "plan": p},
		Rows: RowsOf(p.Members, func(m *reclaim.Member) string { return m.Name }),
		Human: func(w io.Writer, _, _ bool) error {
			WriteReclaimPlan(w, p)
			if dryRun && len(p.Refusals) == 0 {
				fmt.Fprintln(w, "\nDry run: nothing was changed. Re-run with --confirm to do the above.")
			}
			return nil
		}}
}

// WriteReclaimPlan writes the members as they are now (size, what a
// defragmentation gives back, quota, room for the rewrite), the steps a
// run takes, and why it would be refused.
func WriteReclaimPlan(out io.Writer, p *reclaim.Plan) {
	if p.Advice != "" {
		table.Wrapped(out, fmt.Sprintf("%s %s: nothing to reclaim here.", p.Datastore.Name, p.Datastore.Version))
		fmt.Fprintln(out)
		table.Wrapped(out, p.Advice)
		return
	}
	head := fmt.Sprintf("etcd cluster %s, %s, revision %d", p.Datastore.ClusterID, plural(len(p.Members), "member"), p.Revision)
	if alarms := alarmWords(p.Alarms); alarms != "" {
		head += ", alarm " + alarms
	} else {
		head += ", no alarm"
	}
	table.Wrapped(out, head)
	fmt.Fprintln(out)
	t := table.New(out, "MEMBER", "ROLE", "HEALTH", "DB SIZE", "IN USE", "FRAGMENTED", "QUOTA", "DISK FOR THE REWRITE")
	var unchecked []string
	for i := range p.Members {
		m := &p.Members[i]
		health := "healthy"
		if !m.Healthy {
			health = "NOT HEALTHY"
		}
		cells := []string{m.Name, role(m.Leader, m.Learner), health, reclaimSize(m.DBSize), reclaimSize(m.DBSizeInUse), fragmented(m), quotaCell(m.Quota), diskCell(m)}
		if !m.Healthy && m.DBSize == 0 {
			// It said nothing: its sizes and quota are unknown.
			cells = []string{m.Name, role(m.Leader, m.Learner), health, "-", "-", "-", "-", "-"}
		}
		_ = t.Append(cells)
		if !m.Learner && !m.Disk.Checked {
			unchecked = append(unchecked, m.Name)
		}
	}
	_ = t.Render()
	if len(unchecked) > 0 {
		table.Wrapped(out, fmt.Sprintf("Not checked from here: the disk of %s (data directory not on this node, or not known: --data-dir NAME=DIR); the rewrite needs about the size in use free there.",
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
		WriteReclaimPlan(out, res.Plan)
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
			_ = t.Append([]string{m.Name, role(m.Leader, m.Learner), reclaimSize(m.Before), after, quotaCell(m.Quota), outcome})
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

// quotaCell is a quota and where it was read.
func quotaCell(q reclaim.Quota) string {
	size := reclaimSize(q.Bytes)
	if q.Bytes < 0 {
		size = "none"
	}
	src := q.Source
	switch src {
	case reclaim.QuotaFromStatus, reclaim.QuotaFromMetrics, reclaim.QuotaFromFlag, reclaim.QuotaAssumed:
	default:
		src = "manifest"
	}
	return size + " (" + src + ")"
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
		return fmt.Sprintf("fits: needs %s, %s free", reclaimSize(int64(d.Need)), reclaimSize(int64(d.Free)))
	}
	return fmt.Sprintf("DOES NOT FIT: needs %s, %s free, %s kept", reclaimSize(int64(d.Need)), reclaimSize(int64(d.Free)), reclaimSize(int64(d.Keep)))
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
