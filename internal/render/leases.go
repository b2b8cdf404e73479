package render

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/regghost/regghost/pkg/leases"
	"github.com/regghost/regghost/pkg/plural"
	"github.com/regghost/regghost/pkg/table"
)

// Leases is the lease audit in every form -o can ask for; its rows are
// the keys of every fault class.
func Leases(a *leases.Audit, settings string) Output {
	var rows []Row
	seen := map[string]bool{}
	add := func(key string) {
		if !seen[key] {
			seen[key] = true
			rows = append(rows, Row{Name: key})
		}
	}
	for _, e := range a.PastTTL {
		add(e.Key)
	}
	for _, e := range a.NoLease {
		add(e.Key)
	}
	for _, k := range a.Unexpected {
		add(k.Key)
	}
	for _, m := range a.MasterLeases {
		if m.Stale() {
			add(a.Registry + "masterleases/" + m.IP)
		}
	}
	for _, id := range a.Identities {
		add(id.Key)
	}
	return Output{Doc: a, Rows: rows, Human: func(w io.Writer, _, _ bool) error { return writeLeases(w, a, settings) }}
}

func writeLeases(w io.Writer, a *leases.Audit, settings string) error {
	held := fmt.Sprintf("%s hang on %s", plural.Of(a.LeasedKeys, "key"), plural.Of(len(a.Leases), "lease"))
	if a.Granted >= 0 {
		held += fmt.Sprintf("; etcd holds %s, %d of them keyless (normal: a key overwritten without its lease leaves it)", plural.Of(a.Granted, "lease"), a.Keyless)
	} else {
		held += "; leases without keys are not counted"
		if a.GrantedUnread != "" {
			held += " (" + a.GrantedUnread + ")"
		}
	}
	table.Para(w, "", "  ", fmt.Sprintf("Leases at etcd revision %d: %s.", a.Revision, held))
	table.Para(w, "", "  ", settings)
	fmt.Fprintln(w)
	if a.LeaseIsTTL {
		table.Para(w, "", "  ", "kine keeps no etcd leases: a key's lease is its TTL in seconds, and kine deletes a key once that passes (it has kept events 200+ days old: k3s#9743); a lease too big to revoke does not apply.")
	}
	if a.NoAges {
		table.Para(w, "", "  ", fmt.Sprintf("Events: %d; their ages are not judged in a copy of etcd (not against today's clock); %d with no lease (they never expire).", a.Events, len(a.NoLease)))
	} else {
		table.Para(w, "", "  ", fmt.Sprintf("Events: %d; %d past their TTL (older than %s plus the %s lease reuse), %d with no lease (they never expire).",
			a.Events, len(a.PastTTL), a.EventTTL, a.LeaseReuse, len(a.NoLease)))
	}
	for _, class := range []struct {
		what   string
		events []leases.Event
	}{{"Past their TTL", a.PastTTL}, {"With no lease", a.NoLease}} {
		if len(class.events) == 0 {
			continue
		}
		fmt.Fprintln(w)
		fmt.Fprintf(w, "%s, by namespace and reason:\n", class.what)
		t := table.New(w, "NAMESPACE", "REASON", "EVENTS", "OLDEST")
		for _, g := range byNamespaceReason(class.events) {
			if err := t.Append([]string{g.ns, table.OrDash(g.reason), fmt.Sprint(g.n), ageOf(g.oldest)}); err != nil {
				return err
			}
		}
		if err := t.Render(); err != nil {
			return err
		}
	}
	if len(a.Big) > 0 {
		fmt.Fprintln(w)
		table.Para(w, "", "  ", fmt.Sprintf("%s more than %d keys (the most kube-apiserver puts on one; --lease-max-object-count): revoking one deletes every key on it in one apply and stalls etcd; empty it in batches first:",
			plural.Verb(len(a.Big), "lease", "holds", "hold"), a.MaxObjectCount))
		for _, l := range a.Big {
			table.Para(w, "  ", "    ", fmt.Sprintf("lease %x: %s (%s)", l.ID, plural.Of(l.Keys, "key"), resources(l.ByResource)))
		}
	}
	if len(a.Unexpected) > 0 {
		fmt.Fprintln(w)
		table.Para(w, "", "  ", fmt.Sprintf("%s under a lease that %s neither an event nor kube-apiserver's own endpoint lease (it is deleted when its lease expires):", plural.Of(len(a.Unexpected), "key"), plural.Be(len(a.Unexpected))))
		for i, k := range a.Unexpected {
			if i == listedObjects {
				fmt.Fprintf(w, "  … and %d more (-o name lists them all)\n", len(a.Unexpected)-i)
				break
			}
			fmt.Fprintf(w, "  %s (lease %x)\n", table.Escape(k.Key), k.Lease)
		}
	}
	if len(a.MasterLeases) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Masterleases (the addresses the default/kubernetes Service sends traffic to):")
		for _, m := range a.MasterLeases {
			state := "a kube-apiserver answers"
			switch {
			case m.Lease == 0:
				state = "UNDER NO LEASE: written back without it, it never expires"
			case !m.Asked && m.Unasked != "":
				state = "not judged: " + m.Unasked
			case !m.Asked:
				state = "not asked (the API server is not used)"
			case m.NotServed != "":
				state = "NO kube-apiserver answers: " + m.NotServed
			}
			table.Para(w, "  ", "    ", fmt.Sprintf("%s: %s", m.IP, state))
		}
	}
	if len(a.Identities) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "apiserver identity leases no server renews:")
		for _, id := range a.Identities {
			what := "kube-apiserver deletes it once its lease duration passes"
			if id.Expired {
				what = "its lease duration passed: kube-apiserver should have deleted it"
			}
			table.Para(w, "  ", "    ", fmt.Sprintf("%s (%s): not renewed for %s; %s", table.Escape(id.Key), table.Escape(id.Holder), ageOf(id.Since), what))
		}
	}
	if len(a.Unread) > 0 {
		fmt.Fprintln(w)
		table.Para(w, "", "  ", fmt.Sprintf("%s (events or apiserver identity leases) did not decode (encrypted with a key the EncryptionConfiguration given does not hold, or none given, or damaged): they are not judged.", plural.Of(len(a.Unread), "value")))
	}
	return nil
}

type eventGroup struct {
	ns, reason string
	n          int
	oldest     time.Duration
}

func byNamespaceReason(es []leases.Event) []eventGroup {
	m := map[[2]string]*eventGroup{}
	for _, e := range es {
		k := [2]string{e.Namespace, e.Reason}
		g := m[k]
		if g == nil {
			g = &eventGroup{ns: e.Namespace, reason: e.Reason}
			m[k] = g
		}
		g.n++
		g.oldest = max(g.oldest, e.Age)
	}
	var out []eventGroup
	for _, g := range m {
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].n != out[j].n {
			return out[i].n > out[j].n
		}
		return out[i].ns+out[i].reason < out[j].ns+out[j].reason
	})
	return out
}

func resources(by map[string]int) string {
	var parts []string
	for r, n := range by {
		parts = append(parts, fmt.Sprintf("%s %d", r, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// ageOf is d as a person reads an age: 3h12m0s, 45s.
func ageOf(d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return d.Truncate(time.Second).String()
}

// LeasesPlan is the audit with what --confirm removes and leaves: its
// document is the audit's with the removal beside it, its rows the keys of
// every fault class.
func LeasesPlan(a *leases.Audit, settings string, r *leases.Removal, dryRun bool) Output {
	o := Leases(a, settings)
	// The audit's fields, and what --confirm removes and leaves.
	o.Doc = struct {
		*leases.Audit
		Removal *leases.Removal `json:"removal"`
	}{a, r}
	o.Human = func(w io.Writer, _, _ bool) error {
		if err := writeLeases(w, a, settings); err != nil {
			return err
		}
		WriteLeasesRemoval(w, r, dryRun)
		return nil
	}
	return o
}

// WriteLeasesRemoval writes what a removal deletes, what it leaves and
// why, and for a dry run the command that does it.
func WriteLeasesRemoval(w io.Writer, r *leases.Removal, dryRun bool) {
	fmt.Fprintln(w)
	what := []string{}
	if n := len(r.Events); n > 0 {
		what = append(what, plural.Of(n, "event")+" past the TTL")
	}
	if n := len(r.MasterLeases); n > 0 {
		what = append(what, plural.Of(n, "masterlease")+" no kube-apiserver answers at")
	}
	switch {
	case r.Keys() == 0:
		table.Wrapped(w, "Nothing to remove: no event is past its TTL and no masterlease is stale.")
	default:
		table.Wrapped(w, fmt.Sprintf("Removal: %s (%s), each only while unchanged since this audit, in paced transactions that only delete, behind a verified per-key backup (restore puts them back); no full snapshot is taken, nothing else is written.",
			plural.Of(r.Keys(), "key"), strings.Join(what, ", ")))
	}
	if len(r.Left) > 0 {
		fmt.Fprintln(w, "Left as is:")
		for _, l := range r.Left {
			table.Para(w, "  - ", "    ", l+".")
		}
	}
	if dryRun && r.Keys() > 0 {
		fmt.Fprintln(w)
		table.Wrapped(w, "Dry run: nothing was changed. Re-run with --confirm to back up and delete "+plural.Them(r.Keys())+".")
	}
}

// LeasesRemoved is a finished removal; its rows are the keys with their
// outcome.
func LeasesRemoved(res *leases.Removed) Output {
	return Output{Doc: res, Rows: ResultRows(res.Results), Human: func(w io.Writer, _, _ bool) error {
		fmt.Fprintln(w)
		if res.Backup == "" {
			Results(w, res.Results)
			table.Wrapped(w, "Nothing was deleted: every planned key was judged again under the lock and left (above); nothing was changed.")
			return nil
		}
		table.Wrapped(w, "Backup   "+res.Backup+" (verified)")
		fmt.Fprintln(w)
		Results(w, res.Results)
		fmt.Fprintln(w)
		table.Wrapped(w, fmt.Sprintf("Deleted %d of %s.", res.Deleted, plural.Of(res.Planned, "planned key")))
		table.LabeledCommand(w, "Undo these deletes:", "regghost restore "+res.Dir+" --confirm")
		return nil
	}}
}
