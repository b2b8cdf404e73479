package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/regghost/regghost/pkg/leases"
	"github.com/regghost/regghost/pkg/plural"
	"github.com/regghost/regghost/pkg/space"
	"github.com/regghost/regghost/pkg/table"
)

// spaceRows is how many rows each table of space shows (all with -o wide).
const spaceRows = 10

// Space is where etcd's bytes are, in every form -o can ask for.
func Space(r *space.Report) Output {
	return Output{Doc: r, Human: func(w io.Writer, wide, noHeaders bool) error {
		return writeSpace(w, r, wide, noHeaders)
	}}
}

// writeSpace writes the databases (members, or the file), the alarms, the
// totals, the ranked tables (resources, namespaces, classes, keys) and the
// estimates.
func writeSpace(out io.Writer, r *space.Report, wide, noHeaders bool) error {
	where := "etcd"
	if r.File != nil {
		where = "db file " + r.File.Path
	}
	compacted := "never compacted"
	if r.CompactRevision > 0 {
		compacted = fmt.Sprintf("compacted at %d", r.CompactRevision)
	}
	table.Wrapped(out, fmt.Sprintf("Space of %s at revision %d (%s).", where, r.Revision, compacted))
	fmt.Fprintln(out)
	if err := writeDatabases(out, r, noHeaders); err != nil {
		return err
	}
	writeAlarms(out, r)
	fmt.Fprintln(out)
	writeTotals(out, r)
	for _, t := range []struct {
		title string
		rows  []space.Group
	}{{"RESOURCE", r.Resources}, {"NAMESPACE", r.Namespaces}} {
		fmt.Fprintln(out)
		if err := groupTable(out, r, t.title, t.rows, wide, noHeaders); err != nil {
			return err
		}
	}
	if len(r.Classes) > 0 {
		fmt.Fprintln(out)
		if err := classTable(out, r, wide, noHeaders); err != nil {
			return err
		}
	}
	if len(r.LargestKeys) > 0 {
		fmt.Fprintln(out)
		if err := largestTable(out, r, wide, noHeaders); err != nil {
			return err
		}
	}
	fmt.Fprintln(out)
	if err := revisionsTable(out, r, wide, noHeaders); err != nil {
		return err
	}
	fmt.Fprintln(out)
	writeEstimates(out, r)
	if b := r.Backups; b != nil {
		table.Wrapped(out, fmt.Sprintf("Backups: %d under %s hold %s; that filesystem has %s free and keeps %s (regghost backup prune removes old ones).",
			b.Backups, b.Root, Bytes(b.Bytes), Bytes(int64(b.Free)), Bytes(int64(b.Keep))))
	}
	for _, n := range r.Notes {
		table.Wrapped(out, "Note: "+n+".")
	}
	return nil
}

// writeDatabases writes each member's sizes and quota, or the file's pages.
func writeDatabases(out io.Writer, r *space.Report, noHeaders bool) error {
	if p := r.Pages; p != nil {
		table.Wrapped(out, fmt.Sprintf("The file is %s: %s in use, %s free (%s fragmented), which a defragmentation gives back.",
			Bytes(p.FileSize), Bytes(p.InUse), Bytes(p.Fragmented), percent(p.Fragmented, p.FileSize)))
		return nil
	}
	if len(r.Members) == 0 {
		return nil
	}
	hdr := []string{"MEMBER", "DB SIZE", "IN USE", "FRAGMENTED", "QUOTA", "QUOTA USE", "ALARMS", "ROLE"}
	if noHeaders {
		hdr = nil
	}
	t := table.New(out, hdr...).CutFirst(0)
	for _, m := range r.Members {
		role := "-"
		switch {
		case m.Leader:
			role = "leader"
		case m.Learner:
			role = "learner"
		case m.LeaderKnown:
			role = "follower"
		}
		var alarms []string
		for _, a := range r.Alarms {
			if a.ID == m.ID {
				alarms = append(alarms, a.Alarm)
			}
		}
		if m.Unreachable != "" {
			_ = t.Append([]string{m.Name, "?", "?", "?", "?", "?", table.OrDash(strings.Join(alarms, ",")), "unreachable: " + m.Unreachable})
			continue
		}
		quota, use := "?", "?"
		if m.Quota > 0 {
			quota, use = Bytes(m.Quota), percent(m.DBSize, m.Quota)
			if m.QuotaSource == space.QuotaFromFlag {
				quota += " (given)"
			}
		}
		_ = t.Append([]string{m.Name, Bytes(m.DBSize), Bytes(m.DBSizeInUse), fmt.Sprintf("%s (%s)", Bytes(m.Fragmented), percent(m.Fragmented, m.DBSize)),
			quota, use, table.OrDash(strings.Join(alarms, ",")), role})
	}
	if err := t.Render(); err != nil {
		return err
	}
	if r.NotEtcd {
		table.Wrapped(out, "This is not etcd but kine (k3s's datastore over SQL) or another etcd API: it has no quota, no NOSPACE alarm "+
			"and no defragmentation. Its database is the SQL one: kine compacts its own table; SQLite gives the space back to the disk "+
			"with VACUUM (kine stopped), PostgreSQL with VACUUM FULL, MySQL with OPTIMIZE TABLE.")
		return nil
	}
	for _, m := range r.Members {
		if m.Unreachable == "" && m.Quota <= 0 {
			table.Wrapped(out, "A quota marked ? could not be read (etcd before 3.6 says it on /metrics only): give it with --quota-backend-bytes.")
			break
		}
	}
	return nil
}

// writeAlarms says which alarms are raised and what NOSPACE means.
func writeAlarms(out io.Writer, r *space.Report) {
	for _, a := range r.Alarms {
		switch a.Alarm {
		case "NOSPACE":
			table.Wrapped(out, fmt.Sprintf("Alarm NOSPACE is raised on %s: etcd refuses every put, transaction that writes and lease "+
				"(kube-apiserver fails every create and update) until it is disarmed (etcdctl alarm disarm), even once the space is back; "+
				"reads, deletes, compaction and defragmentation still work.", a.Member))
		default:
			table.Wrapped(out, fmt.Sprintf("Alarm %s is raised on %s.", a.Alarm, a.Member))
		}
	}
}

// writeTotals says what the keyspace holds and how the history was counted.
func writeTotals(out io.Writer, r *space.Report) {
	t := r.Total
	s := fmt.Sprintf("Values held now: %s, %s. History held since the last compaction: %s, %s.",
		plural.Of(int(t.Keys), "key"), Bytes(t.Bytes), revisions(t), historyBytes(t, true))
	if r.ExactHistory {
		s = fmt.Sprintf("Values held now: %s, %s. History held since the last compaction: %s (%d of them deletes), %s.",
			plural.Of(int(t.Keys), "key"), Bytes(t.Bytes), revisions(t), t.Tombstones, historyBytes(t, true))
	}
	if t.DeletedKeys > 0 {
		verb := "no longer exist but have"
		if t.DeletedKeys == 1 {
			verb = "no longer exists but has"
		}
		s += fmt.Sprintf(" %s %s revisions held.", plural.Of(int(t.DeletedKeys), "key"), verb)
	}
	table.Wrapped(out, s)
	switch {
	case r.NotEtcd:
		table.Wrapped(out, "Each key's history is bounded from its version and revisions (≤ marks an upper bound); kine keeps its history in its own table and compacts it itself.")
	case !r.ExactHistory:
		table.Wrapped(out, "Live, etcd says no revision count: each key's history is bounded from its version and revisions against the compacted "+
			"revision (≤ marks an upper bound), and deletes are not seen. A db file counts every revision: regghost snapshot save FILE, then regghost space --db FILE.")
	}
	if g := r.Ghosts; g.Keys > 0 {
		table.Wrapped(out, fmt.Sprintf("Ghosts hold %s: %s of values (%s) and %s of history.",
			plural.Of(int(g.Keys), "key"), Bytes(g.Bytes), percent(g.Bytes, t.Bytes), historyBytes(g, false)))
	}
	if line := leasesHold(r.Leases, t.Bytes); line != "" {
		table.Wrapped(out, line)
	}
	table.Wrapped(out, "Bytes are each key's and value's length; etcd's and bbolt's own overhead is in the sizes in use.")
}

// leaseHoldWords name what the leases audit's classes hold in space's totals.
var leaseHoldWords = map[string]string{
	leases.ClassPastTTL: "of events past their TTL",
	leases.ClassNoLease: "of events under no lease",
	leases.ClassBig:     "on leases over the limit",
}

// leasesHold is the line saying what the classes that hold keys hold ("" when none holds any).
func leasesHold(held []leases.Held, total int64) string {
	var parts []string
	for _, h := range held {
		if h.Keys > 0 {
			parts = append(parts, fmt.Sprintf("%s %s, %s (%s)", plural.Of(h.Keys, "key"), leaseHoldWords[h.Class], Bytes(h.Bytes), percent(h.Bytes, total)))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "Leases hold " + strings.Join(parts, "; ") + ": regghost leases lists them and removes what is past its TTL."
}

// groupTable ranks resources or namespaces by their bytes.
func groupTable(out io.Writer, r *space.Report, title string, rows []space.Group, wide, noHeaders bool) error {
	hdr := []string{title, "KEYS", "VALUES", "HISTORY", "SHARE", "GHOSTS"}
	if wide {
		hdr = []string{title, "KEYS", "VALUES", "REVISIONS", "DELETES", "HISTORY", "SHARE", "GHOST KEYS", "GHOSTS"}
	}
	if noHeaders {
		hdr = nil
	}
	t := table.New(out, hdr...).CutFirst(0)
	total := r.Total.AllBytes()
	shown, rest := rows, []space.Group(nil)
	if !wide && len(rows) > spaceRows {
		shown, rest = rows[:spaceRows], rows[spaceRows:]
	}
	for _, g := range shown {
		ghosts := "-"
		if g.Ghost.Keys > 0 {
			ghosts = Bytes(g.Ghost.AllBytes())
		}
		if wide {
			deletes := "?"
			if r.ExactHistory {
				deletes = fmt.Sprint(g.Tombstones)
			}
			_ = t.Append([]string{g.Name, fmt.Sprint(g.Keys), Bytes(g.Bytes), revisionCount(g.Usage), deletes, historyBytes(g.Usage, true),
				percent(g.AllBytes(), total), fmt.Sprint(g.Ghost.Keys), ghosts})
			continue
		}
		_ = t.Append([]string{g.Name, fmt.Sprint(g.Keys), Bytes(g.Bytes), historyBytes(g.Usage, false), percent(g.AllBytes(), total), ghosts})
	}
	if err := t.Render(); err != nil {
		return err
	}
	if len(rest) > 0 {
		var u space.Usage
		for _, g := range rest {
			u.Keys += g.Keys
			u.Bytes += g.Bytes
			u.HistoryBytes += g.HistoryBytes
			u.HistoryBytesMax += g.HistoryBytesMax
		}
		fmt.Fprintf(out, "… and %d more (%s, %s): -o wide lists them all\n", len(rest), Bytes(u.AllBytes()), percent(u.AllBytes(), total))
	}
	return nil
}

// classTable ranks the scan's findings by class.
func classTable(out io.Writer, r *space.Report, wide, noHeaders bool) error {
	hdr := []string{"CLASS", "GHOST", "KEYS", "VALUES", "HISTORY", "SHARE", "NAMESPACES"}
	if noHeaders {
		hdr = nil
	}
	t := table.New(out, hdr...)
	total := r.Total.AllBytes()
	for _, c := range r.Classes {
		ghost := "no"
		if c.Ghost {
			ghost = "yes"
		}
		_ = t.Append([]string{c.Class, ghost, fmt.Sprint(c.Keys), Bytes(c.Bytes), historyBytes(c.Usage, wide), percent(c.AllBytes(), total),
			table.OrDash(strings.Join(c.Namespaces, ", "))})
	}
	return t.Render()
}

// largestTable lists the largest values.
func largestTable(out io.Writer, r *space.Report, wide, noHeaders bool) error {
	hdr := []string{"LARGEST KEY", "VALUE"}
	if noHeaders {
		hdr = nil
	}
	t := table.New(out, hdr...).CutFirst(0)
	for i, k := range r.LargestKeys {
		if !wide && i == spaceRows {
			break
		}
		_ = t.Append([]string{k.Key, Bytes(k.Bytes)})
	}
	return t.Render()
}

// revisionsTable lists the keys with the most revisions held, those with
// more than one.
func revisionsTable(out io.Writer, r *space.Report, wide, noHeaders bool) error {
	var keys []space.KeyRevisions
	for _, k := range r.MostRevisions {
		if max(k.Revisions, k.RevisionsMax) > 1 && (wide || len(keys) < spaceRows) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		table.Wrapped(out, "No key has more than one revision held.")
		return nil
	}
	hdr := []string{"MOST REVISIONS", "REVISIONS", "DELETES", "BYTES", "NOW"}
	if noHeaders {
		hdr = nil
	}
	t := table.New(out, hdr...).CutFirst(0)
	for _, k := range keys {
		revs, bytes := fmt.Sprint(k.Revisions), Bytes(k.Bytes)
		if k.RevisionsMax > k.Revisions {
			revs = fmt.Sprintf("%d–%d", k.Revisions, k.RevisionsMax)
			bytes = "≤ " + bytes
		}
		now, deletes := "exists", "?"
		if k.Deleted {
			now = "deleted"
		}
		if r.ExactHistory {
			deletes = fmt.Sprint(k.Tombstones)
		}
		_ = t.Append([]string{k.Key, revs, deletes, bytes, now})
	}
	return t.Render()
}

// writeEstimates says what each step would free, before any is taken.
func writeEstimates(out io.Writer, r *space.Report) {
	e := r.Estimates
	fmt.Fprintln(out, "Before anything is done:")
	reclaimed := "once etcd is compacted after it and defragmented"
	if r.NotEtcd {
		reclaimed = "once the datastore compacts its table and its database is vacuumed"
	}
	if p := e.PurgeGhosts; p.Keys > 0 {
		table.Para(out, "  - ", "    ", fmt.Sprintf("a purge of the %s would free about %s (values %s, history %s), %s;",
			plural.Of(int(p.Keys), "ghost"), Bytes(p.AllBytes()), Bytes(p.Bytes), historyBytes(p, false), reclaimed))
	} else {
		table.Para(out, "  - ", "    ", "no ghost to purge;")
	}
	what := revisions(e.Compaction)
	if r.ExactHistory {
		what += fmt.Sprintf(", %d of them deletes", e.Compaction.Tombstones)
	}
	amount := "about " + historyBytes(e.Compaction, true)
	if !r.ExactHistory {
		// Live, the revisions of deleted keys are not seen: what a purge
		// just deleted is freed by the compaction too.
		amount = "at least " + historyBytes(e.Compaction, true)
		what += "; deleted keys are not seen live, and their revisions are freed too: --db on a snapshot counts them"
	}
	table.Para(out, "  - ", "    ", fmt.Sprintf("a compaction at revision %d would free %s of history (%s); "+
		"it ends history and recover --rev before that revision: take a snapshot first;", r.Revision, amount, what))
	if r.NotEtcd {
		return
	}
	whose := "the largest member's"
	if r.Pages != nil {
		whose = "the file's"
	}
	table.Para(out, "  - ", "    ", fmt.Sprintf("a defragmentation gives back %s fragmented pages now (%s), and after a compaction what it freed.", whose, Bytes(e.Defragmentation)))
	table.Wrapped(out, "Freed pages go back to the disk, and off the quota, only with a defragmentation: etcd counts the file's size against "+
		"--quota-backend-bytes, free pages included, and an alarm raised stays until it is disarmed.")
}

// revisions is a usage's history revisions, or their bounds.
func revisions(u space.Usage) string {
	if u.HistoryRevisionsMax > u.HistoryRevisions {
		return revisionCount(u) + " revisions"
	}
	return plural.Of(int(u.HistoryRevisions), "revision")
}

// revisionCount is a usage's history revisions, or their bounds, as a number.
func revisionCount(u space.Usage) string {
	if u.HistoryRevisionsMax > u.HistoryRevisions {
		return fmt.Sprintf("%d–%d", u.HistoryRevisions, u.HistoryRevisionsMax)
	}
	return fmt.Sprint(u.HistoryRevisions)
}

// historyBytes is a usage's history bytes: exact, or bounded (both bounds
// with both, else the upper one marked ≤).
func historyBytes(u space.Usage, both bool) string {
	if u.HistoryBytesMax <= u.HistoryBytes {
		return Bytes(u.HistoryBytes)
	}
	if both {
		return Bytes(u.HistoryBytes) + "–" + Bytes(u.HistoryBytesMax)
	}
	return "≤ " + Bytes(u.HistoryBytesMax)
}

// percent is part of whole as a percentage.
func percent(part, whole int64) string {
	if whole <= 0 {
		return "-"
	}
	p := 100 * float64(part) / float64(whole)
	switch {
	case p > 0 && p < 1:
		return "<1%"
	case p < 10 && p != float64(int64(p)):
		return fmt.Sprintf("%.1f%%", p)
	}
	return fmt.Sprintf("%.0f%%", p)
}

// Bytes is n in binary units: 512 B, 1.5 KiB, 23 MiB, 1.2 GiB.
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n), -1
	for v >= unit && i < 4 {
		v /= unit
		i++
	}
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB"}
	if v < 10 {
		return fmt.Sprintf("%.1f %s", v, units[i])
	}
	return fmt.Sprintf("%.0f %s", v, units[i])
}
