package render

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/flagnames"
	"github.com/regghost/regghost/pkg/leases"
	"github.com/regghost/regghost/pkg/plural"
	"github.com/regghost/regghost/pkg/spill"
	"github.com/regghost/regghost/pkg/table"
)

// Report is scan's report in every form -o can ask for; now is the time
// the ages are counted to.
func Report(rep *etcdscan.Report, now func() time.Time) Output {
	if rep.Findings == nil && !rep.Spilled() {
		rep.Findings = []etcdscan.Finding{}
	}
	return Output{Doc: rep, EachRow: func(fn func(Row) error) error {
		return rep.Each(func(f *etcdscan.Finding) error { return fn(Row{Name: f.Key, Obj: f}) })
	}, Human: func(w io.Writer, wide, noHeaders bool) error {
		return WriteReport(w, rep, now(), wide, noHeaders)
	}, JSON: func(w io.Writer) error { return WriteReportJSON(w, rep) }}
}

// WriteReportJSON writes rep as the JSON printer does (marshalled, indented
// by four spaces), one finding at a time: a report of many findings is never
// held in memory as one document, nor twice.
func WriteReportJSON(w io.Writer, rep *etcdscan.Report) error {
	shallow := rep.Header()
	raw, err := json.Marshal(&shallow)
	if err != nil {
		return fmt.Errorf("encode output: %w", err)
	}
	var doc bytes.Buffer
	if err := json.Indent(&doc, raw, "", "    "); err != nil {
		return fmt.Errorf("encode output: %w", err)
	}
	marker := []byte(`"findings": null`)
	i := bytes.Index(doc.Bytes(), marker)
	if i < 0 {
		return fmt.Errorf("encode output: no findings field")
	}
	bw := bufio.NewWriter(w)
	bw.Write(doc.Bytes()[:i])
	if rep.Len() == 0 {
		bw.WriteString(`"findings": []`)
	} else {
		bw.WriteString("\"findings\": [\n")
		var one bytes.Buffer
		first := true
		err := rep.Each(func(f *etcdscan.Finding) error {
			raw, err := json.Marshal(f)
			if err != nil {
				return fmt.Errorf("encode output: %w", err)
			}
			one.Reset()
			if err := json.Indent(&one, raw, "        ", "    "); err != nil {
				return fmt.Errorf("encode output: %w", err)
			}
			if !first {
				bw.WriteString(",\n")
			}
			first = false
			bw.WriteString("        ")
			bw.Write(one.Bytes())
			return nil
		})
		if err != nil {
			return err
		}
		bw.WriteString("\n    ]")
	}
	bw.Write(doc.Bytes()[i+len(marker):])
	bw.WriteString("\n")
	return bw.Flush()
}

// WriteReport writes the human scan report, ages counted to now. The default table has one row
// per finding, NAMESPACE, KIND, NAME, CLASS and AGE, grouped by reason: a
// reason many rows share (their namespace is gone) is said once, above its
// group. Wide adds the witnesses, revision, key and full reason to each row.
func WriteReport(out io.Writer, rep *etcdscan.Report, now time.Time, wide, noHeaders bool) error {
	if rep.Len() > 0 {
		// The rows of a report too large for memory wait in a spill file
		// of their own until the columns' widths are known.
		lines, done, err := reportLines(rep)
		if err != nil {
			return err
		}
		defer done()
		if wide {
			hdr := []string{"NAMESPACE", "KIND", "NAME", "CLASS", "WITNESSES", "AGE", "REVISION", "KEY", "REASON"}
			if noHeaders {
				hdr = nil
			}
			t := table.New(out, hdr...)
			if lines != nil {
				t.Spill(lines)
			}
			err := rep.Each(func(f *etcdscan.Finding) error {
				return t.Append([]string{table.OrDash(f.Namespace), kindOf(f), f.Name, classList(f), shortWitnesses(f), age(now, f.Created), fmt.Sprint(f.ModRevision), f.Key, f.Reason()})
			})
			if err != nil {
				return err
			}
			if err := t.Render(); err != nil {
				return err
			}
		} else if err := printGrouped(out, rep, lines, now, noHeaders); err != nil {
			return err
		}
	}
	Dangling(out, rep.Dangling)
	if wide {
		DanglingByDesign(out, rep.DanglingByDesign)
	}
	scope := "all namespaces"
	if rep.Namespace != "" {
		scope = "namespace " + rep.Namespace
	}
	fmt.Fprintf(out, "\nScanned %s under %s (%s) at etcd revision %d.\n", plural.Of(rep.ScannedKeys, "key"), table.Escape(rep.Prefix), scope, rep.Revision)
	ghosts, suspects, single, err := printNamespaceSummary(out, rep)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Ghosts: %d%s\n", ghosts, classCounts(rep, true))
	if single > 0 {
		fmt.Fprintf(out, "  of which %d (marked *) rest on a single witness: purge refuses them without %s\n", single, flagnames.AcceptSingleWitness)
	}
	fmt.Fprintf(out, "Suspects: %d%s\n", suspects, classCounts(rep, false))
	if line := leaseClasses(rep.Leases); line != "" {
		table.Wrapped(out, line)
	}
	if len(rep.Encrypted) > 0 {
		var keys []string
		for _, k := range slices.Sorted(maps.Keys(rep.Encrypted)) {
			keys = append(keys, fmt.Sprintf("%s %d", table.Escape(k), rep.Encrypted[k]))
		}
		fmt.Fprintf(out, "Encrypted values (provider/key): %s\n", strings.Join(keys, ", "))
	}
	for _, c := range rep.Checks {
		mark := "done"
		if !c.Done {
			mark = "NOT DONE"
		}
		table.Wrapped(out, fmt.Sprintf("Check %s: %s; %s", c.Name, mark, table.Escape(c.Note)))
	}
	return nil
}

// reportLines is a spill file for the table rows of a report whose
// findings are spilled (nil for one held in memory), and what removes it.
func reportLines(rep *etcdscan.Report) (*spill.File, func(), error) {
	if !rep.Spilled() {
		return nil, func() {}, nil
	}
	f, err := spill.Open("")
	if err != nil {
		return nil, nil, fmt.Errorf("lay out %d findings: %w", rep.Len(), err)
	}
	return f, func() { f.Close() }, nil
}

// printGrouped writes the default table: findings grouped by their reason,
// the reason wrapped to the table's width above each group, columns aligned
// across groups. lines, when set, holds the rows instead of memory.
func printGrouped(out io.Writer, rep *etcdscan.Report, lines *spill.File, now time.Time, noHeaders bool) error {
	t, err := groupedTableOf(out, rep.Each, lines, []string{"NAMESPACE", "KIND", "NAME", "CLASS", "AGE"}, noHeaders, func(f *etcdscan.Finding) []string {
		return []string{table.OrDash(f.Namespace), kindOf(f), f.Name, markedClass(f), age(now, f.Created)}
	})
	if err != nil {
		return err
	}
	return t.Render()
}

// markedClass is the CLASS cell: a single-witness ghost carries a *.
func markedClass(f *etcdscan.Finding) string {
	if f.SingleWitness {
		return classList(f) + "*"
	}
	return classList(f)
}

// groupedTable lays findings out as rows of cells under header, grouped by
// reason: each reason once, wrapped, as a comment line above its rows.
// The caller renders it.
func groupedTable(out io.Writer, findings []etcdscan.Finding, header []string, noHeaders bool, cells func(*etcdscan.Finding) []string) *table.Table {
	t, _ := groupedTableOf(out, func(fn func(*etcdscan.Finding) error) error {
		for i := range findings {
			if err := fn(&findings[i]); err != nil {
				return err
			}
		}
		return nil
	}, nil, header, noHeaders, cells)
	return t
}

// groupedTableOf is groupedTable over the findings each gives. With lines
// set, the groups are kept in that spill file instead of memory.
func groupedTableOf(out io.Writer, each func(func(*etcdscan.Finding) error) error, lines *spill.File, header []string, noHeaders bool, cells func(*etcdscan.Finding) []string) (*table.Table, error) {
	if noHeaders {
		header = nil
	}
	t := table.New(out, header...).Grouped()
	if lines != nil {
		t.Spill(lines)
	}
	err := each(func(f *etcdscan.Finding) error {
		t.Comment(f.Reason())
		return t.Append(cells(f))
	})
	return t, err
}

// printNamespaceSummary writes how many ghosts and suspects each namespace
// holds, by class, and returns the totals.
func printNamespaceSummary(out io.Writer, rep *etcdscan.Report) (ghosts, suspects, single int, err error) {
	type counts struct {
		ghosts, suspects int
		classes          map[etcdscan.Class]int
	}
	byNS := map[string]*counts{}
	err = rep.Each(func(f *etcdscan.Finding) error {
		ns := f.Namespace
		if ns == "" {
			ns = "(cluster-scoped)"
		}
		c := byNS[ns]
		if c == nil {
			c = &counts{classes: map[etcdscan.Class]int{}}
			byNS[ns] = c
		}
		if f.Ghost {
			c.ghosts++
			ghosts++
		} else {
			c.suspects++
			suspects++
		}
		if f.SingleWitness {
			single++
		}
		c.classes[f.Classes[0]]++
		return nil
	})
	if err != nil || len(byNS) == 0 {
		return ghosts, suspects, single, err
	}
	t := table.New(out, "NAMESPACE", "GHOSTS", "SUSPECTS", "BY CLASS")
	for _, ns := range slices.Sorted(maps.Keys(byNS)) {
		c := byNS[ns]
		var parts []string
		for _, cl := range etcdscan.Classes {
			if n := c.classes[cl]; n > 0 {
				parts = append(parts, fmt.Sprintf("%s %d", cl, n))
			}
		}
		_ = t.Append([]string{ns, fmt.Sprint(c.ghosts), fmt.Sprint(c.suspects), strings.Join(parts, ", ")})
	}
	return ghosts, suspects, single, t.Render()
}

func kindOf(f *etcdscan.Finding) string {
	if f.Kind == "" {
		return f.Resource
	}
	return f.Kind
}

func classList(f *etcdscan.Finding) string {
	classes := make([]string, len(f.Classes))
	for i, c := range f.Classes {
		classes[i] = string(c)
	}
	return strings.Join(classes, ",")
}

// shortWitnesses is the WITNESSES column of the scan table.
func shortWitnesses(f *etcdscan.Finding) string {
	switch {
	case !f.Ghost:
		return "-"
	case f.SingleWitness:
		return "single"
	}
	return "two"
}

func classCounts(rep *etcdscan.Report, ghosts bool) string {
	var parts []string
	for _, c := range etcdscan.Classes {
		if c.Ghost() == ghosts && rep.Summary[c] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", c, rep.Summary[c]))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func age(now time.Time, t *time.Time) string {
	if t == nil {
		return "-"
	}
	return duration.HumanDuration(now.Sub(*t))
}

// leaseWords name the leases audit's fault classes in the scan's summary,
// in the order they are named.
var leaseWords = []struct{ class, one, many string }{
	{leases.ClassPastTTL, "event past its TTL", "events past their TTL"},
	{leases.ClassNoLease, "event under no lease (it never expires)", "events under no lease (they never expire)"},
	{leases.ClassBig, "lease holding more keys than a revoke can take without stalling etcd", "leases holding more keys than a revoke can take without stalling etcd"},
	{leases.ClassUnexpected, "key under a lease that is neither an event nor a masterlease", "keys under a lease that are neither events nor masterleases"},
	{leases.ClassMaster, "masterlease no kube-apiserver answers at", "masterleases no kube-apiserver answers at"},
	{leases.ClassIdentity, "apiserver identity lease of a server gone", "apiserver identity leases of servers gone"},
	{leases.ClassUnread, "event or identity lease not judged (its value or its lease's TTL could not be read)", "events or identity leases not judged (their value or their lease's TTL could not be read)"},
}

// leaseClasses is the summary line of what the leases audit found that is
// a fault ("" when nothing, or when it was not audited).
func leaseClasses(counts map[string]int) string {
	var parts []string
	for _, w := range leaseWords {
		if n := counts[w.class]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, plural.Pick(n, w.one, w.many)))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "Leases: " + strings.Join(parts, ", ") + "; regghost leases names each and removes what outlived its TTL."
}
