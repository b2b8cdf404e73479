package table

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/regghost/regghost/pkg/spill"
)

// Table is a plain, grep-friendly table in kubectl's layout: no borders,
// two spaces between columns, no trailing blanks. Its cells are escaped
// (values come from etcd). Unless the writer asks for whole cells (-o wide,
// see Full), it fits the width the output is laid out for (see Width): the
// columns it cuts first (by default the last, where the prose is) are cut at
// their end, down to a few words; then the widest others are cut in their
// middle, keeping the start and the end of a key or a name. Each cut is
// marked with …, and a line below the table says so.
//
// Between its rows a table has comment lines ("# " and a text wrapped to
// the width: a reason the rows below share). A grouped table keeps the rows
// that follow one comment together under it, said once. Its lines are held
// in memory, or in a spill file when there may be too many for memory.
type Table struct {
	// Quiet leaves out the line that says cells were cut (the caller says
	// what was).
	Quiet bool
	// Balanced lets the columns cut first widen again when the others
	// have to be cut too: all are then cut to the same width. Otherwise
	// they stay cut to a few words, and the others keep what they can.
	Balanced bool

	out    io.Writer
	header []string
	// grouped and spill say where the lines go; lines holds them once the
	// first is added (see store).
	grouped bool
	spill   *spill.File
	lines   lineStore
	// natural is the width of each column's widest cell, header included.
	natural []int
	// first are the columns cut first, in order (nil: the last column).
	first []int
	// cut is set by Render when it cut a cell, widths to the width of
	// each column.
	cut    bool
	widths []int
}

// tableLine is a row of cells, or a comment line (a reason the rows below
// share, wrapped to the width).
type tableLine struct {
	cells     []string
	comment   string
	isComment bool
	// raw is a comment as given, before it was escaped: what a grouped
	// table in memory tells its groups by (a spill file is not given it).
	raw string
}

// The narrowest a column is cut to: a column cut first keeps a few words,
// the others a recognizable start and end.
const (
	proseMin = 20
	otherMin = 12
)

// New returns a table written to out with the given header (none when
// empty), its lines held in memory.
func New(out io.Writer, header ...string) *Table {
	t := &Table{out: out, header: escapeCells(header)}
	t.measure(t.header)
	return t
}

// Grouped makes t keep its rows by group: the rows added after a comment
// line are rendered together below it, however the rows of other groups
// came between them, each comment once. Groups come in the order their
// comment line first came, after the rows added before any comment. It is
// called before the first line is added.
func (t *Table) Grouped() *Table {
	t.grouped = true
	return t
}

// Spill makes t keep its lines in f instead of memory, until Render has
// written them: the table of a report whose rows may be too many for
// memory. It is called before the first line is added; f is the table's
// alone.
func (t *Table) Spill(f *spill.File) *Table {
	t.spill = f
	return t
}

// store is where t's lines go, picked when the first is added.
func (t *Table) store() lineStore {
	if t.lines == nil {
		switch {
		case t.spill != nil && t.grouped:
			t.lines = &groupedLines{f: t.spill}
		case t.spill != nil:
			t.lines = &spilledLines{f: t.spill}
		case t.grouped:
			t.lines = &memGroups{}
		default:
			t.lines = &memLines{}
		}
	}
	return t.lines
}

// measure widens the columns to hold cells.
func (t *Table) measure(cells []string) {
	for len(t.natural) < len(cells) {
		t.natural = append(t.natural, 0)
	}
	for i, c := range cells {
		t.natural[i] = max(t.natural[i], TextWidth(c))
	}
}

// CutFirst sets the columns cut first, in order (by default the last).
func (t *Table) CutFirst(cols ...int) *Table {
	t.first = cols
	return t
}

// Append adds a row, every cell escaped. It fails only when the table
// spills and its spill file cannot be written.
func (t *Table) Append(cells []string) error {
	l := tableLine{cells: escapeCells(cells)}
	t.measure(l.cells)
	return t.store().add(l)
}

// Comment adds a comment line above the rows that follow, escaped; in a
// grouped table it picks their group. It returns no error: a grouped table
// whose spill file fails returns it from the next Append or Render.
func (t *Table) Comment(text string) {
	_ = t.store().add(tableLine{comment: Escape(text), isComment: true, raw: text})
}

// WasCut reports whether Render cut a cell to fit.
func (t *Table) WasCut() bool { return t.cut }

// Widths are the widths Render gave the columns.
func (t *Table) Widths() []int { return t.widths }

func escapeCells(cells []string) []string {
	safe := make([]string, len(cells))
	for i, c := range cells {
		safe[i] = Escape(c)
	}
	return safe
}

// tableChunk is how many rows Render lays out at a time (a variable for
// the test that compares chunks with one table).
var tableChunk = 512

// Render writes the table: its header, its rows cut to fit the width, the
// comment lines between them.
func (t *Table) Render() error {
	width, full := layoutOf(t.out)
	n := len(t.natural)
	natural, least := append([]int(nil), t.natural...), make([]int, n)
	for i, h := range t.header {
		least[i] = TextWidth(h)
	}
	widths := natural
	first := t.first
	if first == nil && n > 0 {
		first = []int{n - 1}
	}
	if !full {
		widths = fitColumns(natural, least, first, width, t.Balanced)
	}
	t.widths = widths
	isFirst := map[int]bool{}
	for _, i := range first {
		isFirst[i] = true
	}
	cutRow := func(cells []string) []string {
		out := make([]string, len(cells))
		for i, c := range cells {
			if w := TextWidth(c); w > widths[i] {
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
	err := t.store().each(func(l tableLine) error {
		if l.isComment {
			pending = append(pending, Wrap(l.comment, width-2)...)
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
	if t.cut && !t.Quiet {
		Wrapped(t.out, fmt.Sprintf("(… marks a cell cut to fit %d columns: -o wide prints every cell whole)", width))
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

// OrDash is s, or "-" when s is empty: how a cell says a value is not set.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// EmptyFirst moves the empty reason (rows that need no comment line above
// them) to the front of a table's groups, keeping the others in order.
func EmptyFirst(reasons []string) {
	slices.SortStableFunc(reasons, func(a, b string) int { return cmp.Compare(min(len(a), 1), min(len(b), 1)) })
}
