package cmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/yaml"

	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/repair"
)

// printStructured writes v as indented JSON or YAML.
func printStructured(out io.Writer, format string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", format, err)
	}
	if format == "yaml" {
		if b, err = yaml.JSONToYAML(b); err != nil {
			return fmt.Errorf("encode yaml: %w", err)
		}
	} else {
		b = append(b, '\n')
	}
	_, err = out.Write(b)
	return err
}

// reportOutput is scan's output in every form -o can ask for.
func reportOutput(rep *etcdscan.Report) output {
	if rep.Findings == nil {
		rep.Findings = []etcdscan.Finding{}
	}
	rows := make([]row, len(rep.Findings))
	for i := range rep.Findings {
		rows[i] = row{name: rep.Findings[i].Key, obj: &rep.Findings[i]}
	}
	return output{doc: rep, rows: rows, human: func(w io.Writer, wide, noHeaders bool) error {
		return printReport(w, rep, wide, noHeaders)
	}}
}

// tableWidth is what the default scan table is laid out for.
const tableWidth = 120

// printReport writes the human scan report. The default table has one row
// per finding, NAMESPACE, KIND, NAME, CLASS and AGE, grouped by reason: a
// reason many rows share (their namespace is gone) is said once, above its
// group. Wide adds the witnesses, revision, key and full reason to each row.
func printReport(out io.Writer, rep *etcdscan.Report, wide, noHeaders bool) error {
	now := clock()
	if len(rep.Findings) > 0 {
		if wide {
			hdr := []string{"NAMESPACE", "KIND", "NAME", "CLASS", "WITNESSES", "AGE", "REVISION", "KEY", "REASON"}
			if noHeaders {
				hdr = nil
			}
			t := newTable(out, hdr...)
			for _, f := range rep.Findings {
				if err := t.Append([]string{orDash(f.Namespace), kindOf(&f), f.Name, classList(&f), shortWitnesses(&f), age(now, f.Created), fmt.Sprint(f.ModRevision), f.Key, f.Reason()}); err != nil {
					return err
				}
			}
			if err := t.Render(); err != nil {
				return err
			}
		} else {
			printGrouped(out, rep, now, noHeaders)
		}
	}
	printDangling(out, rep.Dangling)
	scope := "all namespaces"
	if rep.Namespace != "" {
		scope = "namespace " + rep.Namespace
	}
	fmt.Fprintf(out, "\nScanned %d keys under %s (%s) at etcd revision %d.\n", rep.ScannedKeys, escapeCell(rep.Prefix), scope, rep.Revision)
	printNamespaceSummary(out, rep)
	ghosts, suspects, single := 0, 0, 0
	for _, f := range rep.Findings {
		if f.Ghost {
			ghosts++
		} else {
			suspects++
		}
		if f.SingleWitness {
			single++
		}
	}
	fmt.Fprintf(out, "Ghosts: %d%s\n", ghosts, classCounts(rep, true))
	if single > 0 {
		fmt.Fprintf(out, "  of which %d (marked *) rest on a single witness: purge refuses them without %s\n", single, repair.AcceptSingleWitnessFlag)
	}
	fmt.Fprintf(out, "Suspects: %d%s\n", suspects, classCounts(rep, false))
	if len(rep.Encrypted) > 0 {
		var keys []string
		for _, k := range sortedKeys(rep.Encrypted) {
			keys = append(keys, fmt.Sprintf("%s %d", escapeCell(k), rep.Encrypted[k]))
		}
		fmt.Fprintf(out, "Encrypted values (provider/key): %s\n", strings.Join(keys, ", "))
	}
	for _, c := range rep.Checks {
		mark := "done"
		if !c.Done {
			mark = "NOT DONE"
		}
		printWrapped(out, fmt.Sprintf("Check %s: %s; %s", c.Name, mark, escapeCell(c.Note)))
	}
	return nil
}

// printGrouped writes the default table: findings grouped by their reason,
// the reason wrapped to the table's width above each group, columns aligned
// across groups.
func printGrouped(out io.Writer, rep *etcdscan.Report, now time.Time, noHeaders bool) {
	groupedTable(out, rep.Findings, []string{"NAMESPACE", "KIND", "NAME", "CLASS", "AGE"}, noHeaders, func(f *etcdscan.Finding) []string {
		return []string{orDash(f.Namespace), kindOf(f), f.Name, markedClass(f), age(now, f.Created)}
	})
}

// markedClass is the CLASS cell: a single-witness ghost carries a *.
func markedClass(f *etcdscan.Finding) string {
	if f.SingleWitness {
		return classList(f) + "*"
	}
	return classList(f)
}

// groupedTable writes findings as rows of cells under header, grouped by
// reason: each reason once, wrapped, as a comment line above its rows.
func groupedTable(out io.Writer, findings []etcdscan.Finding, header []string, noHeaders bool, cells func(*etcdscan.Finding) []string) {
	var order []string
	groups := map[string][][]string{}
	widths := make([]int, len(header))
	for i, h := range header {
		widths[i] = len(h)
	}
	for i := range findings {
		reason := escapeCell(findings[i].Reason())
		if _, ok := groups[reason]; !ok {
			order = append(order, reason)
		}
		row := cells(&findings[i])
		for j, c := range row {
			row[j] = escapeCell(c)
			widths[j] = max(widths[j], utf8.RuneCountInString(row[j]))
		}
		groups[reason] = append(groups[reason], row)
	}
	line := func(cells []string) {
		var b strings.Builder
		for i, c := range cells {
			b.WriteString(c)
			if i < len(cells)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)+2))
			}
		}
		fmt.Fprintln(out, strings.TrimRight(b.String(), " "))
	}
	if !noHeaders {
		line(header)
	}
	for _, reason := range order {
		for _, l := range wrap(reason, tableWidth-2) {
			fmt.Fprintln(out, "# "+l)
		}
		for _, cells := range groups[reason] {
			line(cells)
		}
	}
}

// printNamespaceSummary writes how many ghosts and suspects each namespace
// holds, by class.
func printNamespaceSummary(out io.Writer, rep *etcdscan.Report) {
	type counts struct {
		ghosts, suspects int
		classes          map[etcdscan.Class]int
	}
	byNS := map[string]*counts{}
	for _, f := range rep.Findings {
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
		} else {
			c.suspects++
		}
		c.classes[f.Classes[0]]++
	}
	if len(byNS) == 0 {
		return
	}
	t := newTable(out, "NAMESPACE", "GHOSTS", "SUSPECTS", "BY CLASS")
	for _, ns := range sortedKeys(byNS) {
		c := byNS[ns]
		var parts []string
		for _, cl := range etcdscan.Classes {
			if n := c.classes[cl]; n > 0 {
				parts = append(parts, fmt.Sprintf("%s %d", cl, n))
			}
		}
		_ = t.Append([]string{ns, fmt.Sprint(c.ghosts), fmt.Sprint(c.suspects), strings.Join(parts, ", ")})
	}
	_ = t.Render()
}

// printWrapped writes text wrapped to the table's width, continuation
// lines indented.
func printWrapped(out io.Writer, text string) {
	for i, l := range wrap(text, tableWidth-2) {
		if i > 0 {
			l = "  " + l
		}
		fmt.Fprintln(out, l)
	}
}

// wrap breaks s into lines of at most width runes, at spaces where it can.
func wrap(s string, width int) []string {
	var lines []string
	for utf8.RuneCountInString(s) > width {
		cut := width
		runes := []rune(s)
		for i := width; i > 0; i-- {
			if runes[i] == ' ' {
				cut = i
				break
			}
		}
		lines = append(lines, string(runes[:cut]))
		s = strings.TrimLeft(string(runes[cut:]), " ")
	}
	return append(lines, s)
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

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
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

// table is a tablewriter table whose cells are escaped (values come from
// etcd) and whose lines carry no trailing blanks.
type table struct {
	*tablewriter.Table
	buf *bytes.Buffer
	out io.Writer
}

// Render writes the table.
func (t table) Render() error {
	if err := t.Table.Render(); err != nil {
		return err
	}
	for _, line := range strings.SplitAfter(t.buf.String(), "\n") {
		if line == "" {
			continue
		}
		if _, err := io.WriteString(t.out, strings.TrimRight(line, " \n")+"\n"); err != nil {
			return err
		}
	}
	return nil
}

// Append adds a row, every cell escaped.
func (t table) Append(cells []string) error {
	safe := make([]string, len(cells))
	for i, c := range cells {
		safe[i] = escapeCell(c)
	}
	return t.Table.Append(safe)
}

// newTable returns a plain, grep-friendly table with the given header.
func newTable(out io.Writer, header ...string) table {
	buf := &bytes.Buffer{}
	t := tablewriter.NewTable(buf,
		tablewriter.WithRendition(tw.Rendition{Borders: tw.BorderNone, Settings: tw.Settings{
			Separators: tw.Separators{BetweenColumns: tw.Off, BetweenRows: tw.Off},
			Lines:      tw.Lines{ShowHeaderLine: tw.Off},
		}}),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		// kubectl's layout: no margin, two spaces between columns.
		tablewriter.WithPadding(tw.Padding{Left: "", Right: "  ", Overwrite: true}),
	)
	t.Header(header)
	return table{Table: t, buf: buf, out: out}
}
