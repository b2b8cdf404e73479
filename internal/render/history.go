package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/regghost/regghost/pkg/dbfile"
	"github.com/regghost/regghost/pkg/history"
	"github.com/regghost/regghost/pkg/plural"
	"github.com/regghost/regghost/pkg/table"
)

// History is a history, read from etcd or from the db file info (nil for
// etcd), in every form -o can ask for; its rows are the revisions.
func History(h *history.History, info *dbfile.Info) Output {
	doc := struct {
		*history.History
		File *dbfile.Info `json:"file,omitempty"`
	}{h, info}
	return Output{Doc: doc, Rows: RowsOf(h.Events, func(e *history.Event) string { return e.Key }), Human: func(w io.Writer, wide, noHeaders bool) error {
		return writeHistory(w, h, info, wide, noHeaders)
	}}
}

// writeHistory writes a history: where it was read from and how far back it
// reaches, its revisions, and for a namespace each delete of its key with
// the objects left in it.
func writeHistory(out io.Writer, h *history.History, info *dbfile.Info, wide, noHeaders bool) error {
	from := "etcd"
	if info != nil {
		from = "db file " + info.Path
	}
	span := fmt.Sprintf("up to revision %d", h.Revision)
	if h.From > 0 {
		span = fmt.Sprintf("revisions %d to %d", h.Start, h.Revision)
	}
	table.Wrapped(out, fmt.Sprintf("History of %s from %s, %s.", h.Selection, from, span))
	table.Wrapped(out, reach(h, info))
	if len(h.Events) > 0 {
		fmt.Fprintln(out)
		if err := historyTable(out, h, wide, noHeaders); err != nil {
			return err
		}
	}
	fmt.Fprintln(out)
	if len(h.Events) == 0 {
		what := "No revision of " + h.Selection.String() + " is held"
		if h.Compacted {
			what += ": it may have changed before the compaction; an older snapshot (--db) may hold it"
		}
		if h.Selection.Key != "" {
			what += " (every key under it: end it with /)"
		}
		table.Wrapped(out, what+".")
	} else {
		table.Wrapped(out, fmt.Sprintf("%s of %s.", plural.Of(len(h.Events), "revision"), plural.Of(h.Keys, "key")))
	}
	if h.Selection.Namespace != "" {
		writeNamespaceDeletes(out, h, wide, noHeaders)
	}
	return nil
}

// reach says how far back the history goes.
func reach(h *history.History, info *dbfile.Info) string {
	if info != nil {
		s := "The file holds every revision since 1: it was never compacted."
		if info.CompactRevision > 0 {
			s = fmt.Sprintf("The file holds every revision since its compaction at revision %d, and each key's newest revision before it.", info.CompactRevision)
		}
		if info.ScheduledCompactRevision > 0 {
			s += fmt.Sprintf(" A compaction to revision %d was scheduled and not finished: revisions up to it may be partly gone.", info.ScheduledCompactRevision)
		}
		if h.From > 0 {
			s += fmt.Sprintf(" Revisions from %d on are shown.", h.From)
		}
		return s
	}
	switch {
	case h.Compacted:
		return fmt.Sprintf("etcd compacted its history at revision %d: nothing older can be read, only each key's newest revision at it "+
			"(kube-apiserver compacts every 5 minutes by default; a snapshot reaches further back: --db FILE).", h.CompactRevision)
	case h.From > 1:
		return fmt.Sprintf("Read from revision %d, as --rev asks.", h.From)
	}
	return "etcd holds every revision since 1: it was never compacted."
}

// historyTable writes one row per revision.
func historyTable(out io.Writer, h *history.History, wide, noHeaders bool) error {
	hdr := []string{"REVISION", "EVENT", "RESOURCE", "NAMESPACE", "NAME", "VERSION", "CHANGES"}
	if wide {
		hdr = []string{"REVISION", "EVENT", "KEY", "CREATED", "VERSION", "SIZE", "SHA256", "RV", "GENERATION", "DELETION", "FINALIZERS", "CHANGES"}
	}
	if noHeaders {
		hdr = nil
	}
	t := table.New(out, hdr...)
	for _, e := range h.Events {
		changes := strings.Join(e.Changes, "; ")
		if e.Unreadable != "" && e.Type != history.Deleted && !strings.Contains(changes, e.Unreadable) {
			changes += "; fields unknown: " + e.Unreadable
		}
		version := "-"
		if e.Type != history.Deleted {
			version = fmt.Sprint(e.Version)
		}
		if !wide {
			_ = t.Append([]string{fmt.Sprint(e.Revision), e.Type, table.OrDash(e.Resource), table.OrDash(e.Namespace), table.OrDash(e.Name), version, changes})
			continue
		}
		created, size, rv, gen, deletion, finalizers := "-", "-", "-", "-", "-", "-"
		if e.Type != history.Deleted {
			created, size = fmt.Sprint(e.CreateRevision), fmt.Sprint(e.Size)
		}
		if f := e.Object; f != nil {
			rv, gen, finalizers = f.ResourceVersion, fmt.Sprint(f.Generation), table.OrDash(strings.Join(f.Finalizers, ","))
			if f.DeletionTimestamp != nil {
				deletion = f.DeletionTimestamp.Format("2006-01-02T15:04:05Z")
			}
		}
		_ = t.Append([]string{fmt.Sprint(e.Revision), e.Type, e.Key, created, version, size, table.OrDash(e.SHA256), rv, gen, deletion, finalizers, changes})
	}
	return t.Render()
}

// writeNamespaceDeletes says when the namespace's key was deleted and which
// objects were still in it: the moment they became ghosts.
func writeNamespaceDeletes(out io.Writer, h *history.History, wide, noHeaders bool) {
	ns := h.Selection.Namespace
	if len(h.NamespaceDeletes) == 0 {
		table.Wrapped(out, fmt.Sprintf("Namespace %s's key was not deleted in these revisions.", ns))
		return
	}
	for _, d := range h.NamespaceDeletes {
		fmt.Fprintln(out)
		switch {
		case d.Unknown != "":
			table.Wrapped(out, fmt.Sprintf("Namespace %s's key was deleted at revision %d; the objects still in it could not be read: %s.", ns, d.Revision, d.Unknown))
		case len(d.Left) == 0:
			table.Wrapped(out, fmt.Sprintf("Namespace %s's key was deleted at revision %d with no object left in it.", ns, d.Revision))
		default:
			table.Wrapped(out, fmt.Sprintf("Namespace %s's key was deleted at revision %d with %s still in it: %s then (orphaned-namespace).", ns, d.Revision, plural.Of(len(d.Left), "object"), plural.Pick(len(d.Left), "it became a ghost", "they became ghosts")))
			hdr := []string{"RESOURCE", "NAME", "CREATED", "LAST WRITTEN"}
			if wide {
				hdr = append(hdr, "KEY")
			}
			if noHeaders {
				hdr = nil
			}
			t := table.New(out, hdr...)
			for _, o := range d.Left {
				cells := []string{o.Resource, o.Name, fmt.Sprint(o.CreateRevision), fmt.Sprint(o.ModRevision)}
				if wide {
					cells = append(cells, o.Key)
				}
				_ = t.Append(cells)
			}
			_ = t.Render()
		}
		if d.RecreatedAt > 0 {
			table.Wrapped(out, fmt.Sprintf("It was created again at revision %d.", d.RecreatedAt))
		}
	}
}
