package cmd

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/regghost/regghost/internal/table"
	"github.com/regghost/regghost/pkg/dbfile"
	"github.com/regghost/regghost/pkg/decode"
	"github.com/regghost/regghost/pkg/decrypt"
	"github.com/regghost/regghost/pkg/history"
)

type historyOptions struct {
	namespace string
	rev       int64
	print     *printFlags
	sel       history.Selection
}

func newHistoryCmd(g *globalOptions) *cobra.Command {
	o := &historyOptions{print: newPrintFlags(true, "table")}
	c := &cobra.Command{
		Use:   "history (KEY | PREFIX/ | -n NAMESPACE)",
		Short: "Show every revision etcd (or a db file) still holds of a key, a namespace or a prefix",
		Long: `history lists the revisions of a key, of a namespace (its key and every object
in it, custom resources included) or of every key under a prefix: each write's
mod revision, create revision and version, each delete, and what changed since
the key's previous revision (generation, deletionTimestamp, finalizers, uid,
size; the value's sha256 and resourceVersion in -o wide and json). An encrypted
value is decrypted with --encryption-provider-config; one that cannot be read
keeps its size and sha256 and says why its fields are unknown.

For a namespace, each delete of its key is shown with the objects still in it
at that revision: the moment they became ghosts.

Live, etcd holds revisions back to its last compaction only (kube-apiserver
compacts every 5 minutes by default): history reads from --rev, or from the
compacted revision when --rev is older, and says so. A db file (--db: an
etcdctl snapshot, a k3s snapshot, zipped or not, or a member's db) holds every
revision since its own last compaction: an older snapshot reaches further back.
A KEY or PREFIX not starting with / is taken under --prefix.`,
		Example: `  regghost history -n kb-system
  regghost history /registry/pods/kb-system/p1 -o wide
  regghost history /registry/example.com/widgets/ -o json
  regghost history -n kb-system --db /var/lib/rancher/k3s/server/db/snapshots/etcd-snapshot-node1-1733212345.zip
  regghost history configmaps/kb-system/cm1 --rev 120000`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := o.complete(g, args); err != nil {
				return err
			}
			if err := o.validate(); err != nil {
				return err
			}
			return o.run(c.Context(), g, c.OutOrStdout())
		},
	}
	c.Flags().StringVarP(&o.namespace, "namespace", "n", "", "the history of this namespace: its key and every object in it")
	c.Flags().Int64Var(&o.rev, "rev", 0, "report revisions from this one on (default: the earliest held)")
	o.print.addFlags(c)
	return c
}

// complete builds the selection from the argument or --namespace.
func (o *historyOptions) complete(g *globalOptions, args []string) error {
	g.discover()
	o.sel = history.Selection{Registry: g.prefix, Namespace: o.namespace}
	if len(args) == 1 {
		arg := args[0]
		if !strings.HasPrefix(arg, "/") {
			arg = g.prefix + arg
		}
		if strings.HasSuffix(arg, "/") {
			o.sel.Prefix = arg
		} else {
			o.sel.Key = arg
		}
	}
	return nil
}

func (o *historyOptions) validate() error {
	if err := o.sel.Validate(); err != nil {
		return usageError("%v: history KEY, history PREFIX/ or history -n NAMESPACE", err)
	}
	if err := validateNamespace(o.namespace); err != nil {
		return err
	}
	if o.rev < 0 {
		return usageError("--rev must not be negative, got %d", o.rev)
	}
	return o.print.validate()
}

func (o *historyOptions) run(ctx context.Context, g *globalOptions, out io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, g.etcd.CommandTimeout)
	defer cancel()
	dec, err := g.decrypter(ctx)
	if err != nil {
		return err
	}
	opts := history.Options{From: o.rev, Decode: func(ctx context.Context, key string, value []byte) (*decode.Object, error) {
		return decrypt.DecodeMeta(ctx, dec, g.prefix, key, value)
	}}
	var h *history.History
	var info *dbfile.Info
	if g.db != "" {
		f, err := dbfile.OpenFile(g.db)
		if err != nil {
			return err
		}
		defer f.Close()
		i := f.Info()
		info = &i
		g.sayDB(i)
		if h, err = history.FromFile(ctx, f, o.sel, opts); err != nil {
			return err
		}
	} else {
		ctx, cli, done, err := g.session(ctx)
		if err != nil {
			return err
		}
		defer done()
		if h, err = history.FromEtcd(ctx, cli, o.sel, opts); err != nil {
			return err
		}
	}
	rows := make([]row, len(h.Events))
	for i := range h.Events {
		rows[i] = row{name: h.Events[i].Key, obj: &h.Events[i]}
	}
	doc := struct {
		*history.History
		File *dbfile.Info `json:"file,omitempty"`
	}{h, info}
	return o.print.print(out, output{doc: doc, rows: rows, human: func(w io.Writer, wide, noHeaders bool) error {
		return printHistory(w, h, info, wide, noHeaders)
	}})
}

// printHistory writes a history: where it was read from and how far back it
// reaches, its revisions, and for a namespace each delete of its key with
// the objects left in it.
func printHistory(out io.Writer, h *history.History, info *dbfile.Info, wide, noHeaders bool) error {
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
		table.Wrapped(out, fmt.Sprintf("%s of %s.", plural(len(h.Events), "revision"), plural(h.Keys, "key")))
	}
	if h.Selection.Namespace != "" {
		printNamespaceDeletes(out, h, wide, noHeaders)
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

// printNamespaceDeletes says when the namespace's key was deleted and which
// objects were still in it: the moment they became ghosts.
func printNamespaceDeletes(out io.Writer, h *history.History, wide, noHeaders bool) {
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
			table.Wrapped(out, fmt.Sprintf("Namespace %s's key was deleted at revision %d with %s still in it: they became ghosts then (orphaned-namespace).", ns, d.Revision, plural(len(d.Left), "object")))
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

// plural is n and the noun, in the plural unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
