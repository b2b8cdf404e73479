package cmd

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/yaml"

	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/repair"
	"github.com/regghost/regghost/pkg/spill"
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
	if rep.Findings == nil && !rep.Spilled() {
		rep.Findings = []etcdscan.Finding{}
	}
	return output{doc: rep, eachRow: func(fn func(row) error) error {
		return rep.Each(func(f *etcdscan.Finding) error { return fn(row{name: f.Key, obj: f}) })
	}, human: func(w io.Writer, wide, noHeaders bool) error {
		return printReport(w, rep, wide, noHeaders)
	}, json: func(w io.Writer) error { return writeReportJSON(w, rep) }}
}

// writeReportJSON writes rep as the JSON printer does (marshalled, indented
// by four spaces), one finding at a time: a report of many findings is never
// held in memory as one document, nor twice.
func writeReportJSON(w io.Writer, rep *etcdscan.Report) error {
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

// tableWidth is what the default scan table is laid out for.
const tableWidth = 120

// printReport writes the human scan report. The default table has one row
// per finding, NAMESPACE, KIND, NAME, CLASS and AGE, grouped by reason: a
// reason many rows share (their namespace is gone) is said once, above its
// group. Wide adds the witnesses, revision, key and full reason to each row.
func printReport(out io.Writer, rep *etcdscan.Report, wide, noHeaders bool) error {
	now := clock()
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
			t := newTable(out, hdr...)
			if lines != nil {
				t.lines = &spilledLines{f: lines}
			}
			err := rep.Each(func(f *etcdscan.Finding) error {
				return t.Append([]string{orDash(f.Namespace), kindOf(f), f.Name, classList(f), shortWitnesses(f), age(now, f.Created), fmt.Sprint(f.ModRevision), f.Key, f.Reason()})
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
	printDangling(out, rep.Dangling)
	scope := "all namespaces"
	if rep.Namespace != "" {
		scope = "namespace " + rep.Namespace
	}
	fmt.Fprintf(out, "\nScanned %d keys under %s (%s) at etcd revision %d.\n", rep.ScannedKeys, escapeCell(rep.Prefix), scope, rep.Revision)
	ghosts, suspects, single, err := printNamespaceSummary(out, rep)
	if err != nil {
		return err
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
		return []string{orDash(f.Namespace), kindOf(f), f.Name, markedClass(f), age(now, f.Created)}
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
func groupedTable(out io.Writer, findings []etcdscan.Finding, header []string, noHeaders bool, cells func(*etcdscan.Finding) []string) *table {
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
func groupedTableOf(out io.Writer, each func(func(*etcdscan.Finding) error) error, lines *spill.File, header []string, noHeaders bool, cells func(*etcdscan.Finding) []string) (*table, error) {
	if noHeaders {
		header = nil
	}
	t := newTable(out, header...)
	if lines != nil {
		// Every row under its reason: the spill file keeps each reason's
		// rows together, the reason said once.
		t.lines = &groupedLines{f: lines}
		err := each(func(f *etcdscan.Finding) error {
			t.comment(f.Reason())
			return t.Append(cells(f))
		})
		return t, err
	}
	var order []string
	groups := map[string][][]string{}
	err := each(func(f *etcdscan.Finding) error {
		reason := f.Reason()
		if _, ok := groups[reason]; !ok {
			order = append(order, reason)
		}
		groups[reason] = append(groups[reason], cells(f))
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, reason := range order {
		t.comment(reason)
		for _, row := range groups[reason] {
			_ = t.Append(row)
		}
	}
	return t, nil
}

// emptyFirst moves the empty reason (rows that need no comment line above
// them) to the front of a table's groups, keeping the others in order.
func emptyFirst(reasons []string) {
	slices.SortStableFunc(reasons, func(a, b string) int { return cmp.Compare(min(len(a), 1), min(len(b), 1)) })
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

// table is a plain, grep-friendly table in kubectl's layout: no borders,
// two spaces between columns, no trailing blanks. Its cells are escaped
// (values come from etcd). Unless the writer asks for whole cells (-o wide),
// it fits the width the output is laid out for: the columns it cuts first
// (by default the last, where the prose is) are cut at their end, down to a
// few words; then the widest others are cut in their middle, keeping the
// start and the end of a key or a name. Each cut is marked with ….
type table struct {
	out    io.Writer
	header []string
	// lines holds the rows and comment lines (in memory unless the table
	// is one row per finding of a report too large for memory).
	lines lineStore
	// natural is the width of each column's widest cell, header included.
	natural []int
	// first are the columns cut first, in order (nil: the last column).
	first []int
	// cut is set by Render when it cut a cell, widths to the width of
	// each column.
	cut    bool
	widths []int
	// quiet leaves out the line that says cells were cut (the caller says
	// what was).
	quiet bool
	// balanced lets the columns cut first widen again when the others
	// have to be cut too: all are then cut to the same width. Otherwise
	// they stay cut to a few words, and the others keep what they can.
	balanced bool
}

// tableLine is a row of cells, or a comment line (a reason the rows below
// share, wrapped to the width).
type tableLine struct {
	cells     []string
	comment   string
	isComment bool
}

// The narrowest a column is cut to: a column cut first keeps a few words,
// the others a recognizable start and end.
const (
	proseMin = 20
	otherMin = 12
)

// newTable returns a table with the given header (none when empty).
func newTable(out io.Writer, header ...string) *table {
	t := &table{out: out, header: escapeCells(header), lines: &memLines{}}
	t.measure(t.header)
	return t
}

// measure widens the columns to hold cells.
func (t *table) measure(cells []string) {
	for len(t.natural) < len(cells) {
		t.natural = append(t.natural, 0)
	}
	for i, c := range cells {
		t.natural[i] = max(t.natural[i], textWidth(c))
	}
}

// cutFirst sets the columns cut first, in order.
func (t *table) cutFirst(cols ...int) *table {
	t.first = cols
	return t
}

// Append adds a row, every cell escaped.
func (t *table) Append(cells []string) error {
	l := tableLine{cells: escapeCells(cells)}
	t.measure(l.cells)
	return t.lines.add(l)
}

// comment adds a comment line above the rows that follow, escaped.
func (t *table) comment(text string) {
	_ = t.lines.add(tableLine{comment: escapeCell(text), isComment: true})
}

func escapeCells(cells []string) []string {
	safe := make([]string, len(cells))
	for i, c := range cells {
		safe[i] = escapeCell(c)
	}
	return safe
}

// tableChunk is how many rows Render lays out at a time (a variable for
// the test that compares chunks with one table).
var tableChunk = 512

// Render writes the table.
func (t *table) Render() error {
	width, full := layoutOf(t.out)
	n := len(t.natural)
	natural, least := append([]int(nil), t.natural...), make([]int, n)
	for i, h := range t.header {
		least[i] = textWidth(h)
	}
	widths := natural
	first := t.first
	if first == nil && n > 0 {
		first = []int{n - 1}
	}
	if !full {
		widths = fitColumns(natural, least, first, width, t.balanced)
	}
	t.widths = widths
	isFirst := map[int]bool{}
	for _, i := range first {
		isFirst[i] = true
	}
	cutRow := func(cells []string) []string {
		out := make([]string, len(cells))
		for i, c := range cells {
			if w := textWidth(c); w > widths[i] {
				t.cut = true
				if isFirst[i] {
					c = cutEnd(c, widths[i])
				} else {
					c = cutMiddle(c, widths[i])
				}
			}
			out[i] = c
		}
		return out
	}
	// Rows go through tablewriter in kubectl's layout a chunk at a time, so
	// that a table of many rows is never held whole as text: each chunk
	// starts with a ruler row whose cells are exactly the columns' widths,
	// which makes every chunk lay its columns out as one table of all rows
	// would; the ruler's line is dropped. The comment lines (a reason said
	// once above its rows) are put between the rows.
	out := bufio.NewWriter(t.out)
	ruler := make([]string, n)
	for i := range ruler {
		ruler[i] = strings.Repeat("x", widths[i])
	}
	header := len(t.header) > 0
	var chunk [][]string
	var above [][]string
	var pending []string
	flush := func() error {
		if len(chunk) == 0 && !header {
			return nil
		}
		var tb bytes.Buffer
		tw := newTableWriter(&tb)
		if header {
			tw.Header(cutRow(t.header))
		}
		if err := tw.Append(ruler); err != nil {
			return err
		}
		for _, row := range chunk {
			if err := tw.Append(row); err != nil {
				return err
			}
		}
		if err := tw.Render(); err != nil {
			return err
		}
		var lines []string
		for _, line := range strings.SplitAfter(tb.String(), "\n") {
			if line != "" {
				lines = append(lines, strings.TrimRight(line, " \n"))
			}
		}
		if header && len(lines) > 0 {
			out.WriteString(lines[0] + "\n")
			lines = lines[1:]
		}
		header = false
		if len(lines) > 0 {
			lines = lines[1:] // the ruler
		}
		for i := range chunk {
			for _, c := range above[i] {
				out.WriteString("# " + c + "\n")
			}
			if i < len(lines) {
				out.WriteString(lines[i] + "\n")
			}
		}
		chunk, above = chunk[:0], above[:0]
		return nil
	}
	err := t.lines.each(func(l tableLine) error {
		if l.isComment {
			pending = append(pending, wrap(l.comment, width-2)...)
			return nil
		}
		chunk, above = append(chunk, cutRow(l.cells)), append(above, pending)
		pending = nil
		if len(chunk) == tableChunk {
			return flush()
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := flush(); err != nil {
		return err
	}
	for _, c := range pending {
		out.WriteString("# " + c + "\n")
	}
	if err := out.Flush(); err != nil {
		return err
	}
	if t.cut && !t.quiet {
		printWrapped(t.out, fmt.Sprintf("(… marks a cell cut to fit %d columns: -o wide prints every cell whole)", width))
	}
	return nil
}

// fitColumns returns the widths of columns whose widest cells take natural
// columns (their headers least), so that a line, two blanks between
// columns, takes at most width columns where it can. The columns first are
// narrowed first, in order, down to proseMin; if that is not enough, the
// widest of the others are narrowed together, down to otherMin, or with
// balanced the widest of all columns.
func fitColumns(natural, least, first []int, width int, balanced bool) []int {
	w := append([]int(nil), natural...)
	total := func() int {
		s := 2 * (len(w) - 1)
		for _, x := range w {
			s += x
		}
		return s
	}
	if total() <= width {
		return w
	}
	floor := make([]int, len(w))
	isFirst := make([]bool, len(w))
	for i := range w {
		floor[i] = max(least[i], min(natural[i], otherMin))
	}
	for _, i := range first {
		isFirst[i] = !balanced
		floor[i] = max(least[i], min(natural[i], proseMin))
		w[i] = max(floor[i], w[i]-(total()-width))
		if total() <= width {
			return w
		}
	}
	widest := 0
	for _, x := range natural {
		widest = max(widest, x)
	}
	for c := widest - 1; c > 0; c-- {
		for i := range w {
			if !isFirst[i] {
				w[i] = max(floor[i], min(natural[i], c))
			}
		}
		if total() <= width {
			break
		}
	}
	return w
}

// newTableWriter is a tablewriter table in kubectl's layout: no borders,
// no margin, two spaces between columns.
func newTableWriter(out io.Writer) *tablewriter.Table {
	return tablewriter.NewTable(out,
		tablewriter.WithRendition(tw.Rendition{Borders: tw.BorderNone, Settings: tw.Settings{
			Separators: tw.Separators{BetweenColumns: tw.Off, BetweenRows: tw.Off},
			Lines:      tw.Lines{ShowHeaderLine: tw.Off},
		}}),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithPadding(tw.Padding{Left: "", Right: "  ", Overwrite: true}),
	)
}
