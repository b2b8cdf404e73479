package table

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/regghost/regghost/pkg/spill"
)

// TestRender: a table in kubectl's layout, its cells escaped, comments
// wrapped, cut to the width unless cells are whole, the cut said below it
// unless quiet.
func TestRender(t *testing.T) {
	twoRows := func(out *Layout, header ...string) *Table {
		tb := New(out, header...)
		_ = tb.Append([]string{"kb-system", "Pod", "api-0", "the namespace is gone"})
		_ = tb.Append([]string{"", "Namespace", "名前", "x"})
		return tb
	}
	longRow := func(out *Layout, _ ...string) *Table {
		tb := New(out, "KEY", "OUTCOME", "DETAIL")
		_ = tb.Append([]string{"/registry/persistentvolumes/pvc-8730bc07-1390-4a1e-9e63-c8346b2f7c94", "retained", "reclaim policy Delete -> Retain through the API server (resourceVersion 86 -> 95)"})
		return tb
	}
	const cutNote = "(… marks a cell cut to fit 60 columns: -o wide prints\n  every cell whole)\n"
	tests := []struct {
		name   string
		width  int
		full   bool
		table  func(*Layout, ...string) *Table
		header []string
		set    func(*Table)
		want   string
		cut    bool
		widths []int
	}{
		{name: "columns aligned, two blanks apart, wide characters counted", width: 120, table: twoRows, header: []string{"NAMESPACE", "KIND", "NAME", "REASON"},
			want:   "NAMESPACE  KIND       NAME   REASON\nkb-system  Pod        api-0  the namespace is gone\n           Namespace  名前   x\n",
			widths: []int{9, 9, 5, 21}},
		{name: "no header", width: 120, table: twoRows,
			want:   "kb-system  Pod        api-0  the namespace is gone\n           Namespace  名前   x\n",
			widths: []int{9, 9, 5, 21}},
		{name: "a header and no rows", width: 120, table: func(out *Layout, _ ...string) *Table { return New(out, "A", "B") },
			want: "A  B\n", widths: []int{1, 1}},
		{name: "nothing at all", width: 120, table: func(out *Layout, _ ...string) *Table { return New(out) }},
		{name: "a comment wrapped above its rows", width: 30, table: func(out *Layout, _ ...string) *Table {
			tb := New(out, "A", "B")
			tb.Comment("a reason long enough to be wrapped over two lines at least")
			_ = tb.Append([]string{"x", "y"})
			return tb
		}, want: "A  B\n# a reason long enough to be\n# wrapped over two lines at\n# least\nx  y\n", widths: []int{1, 1}},
		{name: "cells escaped", width: 120, table: func(out *Layout, _ ...string) *Table {
			tb := New(out, "NAME")
			_ = tb.Append([]string{"evil\x1b[2J\nname"})
			return tb
		}, want: "NAME\nevil\\u001b[2J\\nname\n", widths: []int{19}},
		{name: "the last column cut first, then the widest", width: 60, table: longRow,
			want: "KEY                           OUTCOME   DETAIL\n/registry/per…3-c8346b2f7c94  retained  reclaim policy Dele…\n" + cutNote,
			cut:  true, widths: []int{28, 8, 20}},
		{name: "quiet leaves the cut unsaid", width: 60, table: longRow, set: func(t *Table) { t.Quiet = true },
			want: "KEY                           OUTCOME   DETAIL\n/registry/per…3-c8346b2f7c94  retained  reclaim policy Dele…\n",
			cut:  true, widths: []int{28, 8, 20}},
		{name: "the columns cut first are chosen", width: 60, table: longRow, set: func(t *Table) { t.CutFirst(0) },
			want: "KEY                   OUTCOME   DETAIL\n/registry/persisten…  retained  reclaim polic…sion 86 -> 95)\n" + cutNote,
			cut:  true, widths: []int{20, 8, 28}},
		{name: "whole cells are not cut", width: 60, full: true, table: longRow,
			want:   "KEY                                                                   OUTCOME   DETAIL\n/registry/persistentvolumes/pvc-8730bc07-1390-4a1e-9e63-c8346b2f7c94  retained  reclaim policy Delete -> Retain through the API server (resourceVersion 86 -> 95)\n",
			widths: []int{68, 8, 81}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			tb := tt.table(&Layout{Writer: &b, Width: tt.width, Full: tt.full}, tt.header...)
			if tt.set != nil {
				tt.set(tb)
			}
			if err := tb.Render(); err != nil {
				t.Fatal(err)
			}
			if b.String() != tt.want {
				t.Errorf("got\n%q\nwant\n%q", b.String(), tt.want)
			}
			if tb.WasCut() != tt.cut || !reflect.DeepEqual(tb.Widths(), tt.widths) {
				t.Errorf("WasCut, Widths = %v, %v, want %v, %v", tb.WasCut(), tb.Widths(), tt.cut, tt.widths)
			}
		})
	}
}

// TestGroupedTable: a grouped table, in memory or spilled, renders each
// comment once above all its rows, as rows grouped by hand do.
func TestGroupedTable(t *testing.T) {
	type finding struct{ reason, ns, name string }
	var findings []finding
	for i := range 300 {
		reason := fmt.Sprintf("namespace ns-%d does not exist (no /registry/namespaces/ns-%d key), a reason long enough to wrap", i%7, i%7)
		findings = append(findings, finding{reason, fmt.Sprintf("ns-%d", i%7), strings.Repeat("n", i%41) + fmt.Sprint(i)})
	}
	findings = append(findings, finding{"", "-", "no reason"}, finding{"evil\x1b[2J", "-", "escaped reason"})
	cells := func(f finding) []string { return []string{f.ns, "Pod", f.name} }
	byHand := func(out *Layout) *Table {
		tb := New(out, "NAMESPACE", "KIND", "NAME")
		var order []string
		groups := map[string][]finding{}
		for _, f := range findings {
			if _, ok := groups[f.reason]; !ok {
				order = append(order, f.reason)
			}
			groups[f.reason] = append(groups[f.reason], f)
		}
		for _, reason := range order {
			tb.Comment(reason)
			for _, f := range groups[reason] {
				_ = tb.Append(cells(f))
			}
		}
		return tb
	}
	grouped := func(spilled bool) func(out *Layout) *Table {
		return func(out *Layout) *Table {
			tb := New(out, "NAMESPACE", "KIND", "NAME").Grouped()
			if spilled {
				f, err := spill.Open(t.TempDir())
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { f.Close() })
				tb.Spill(f)
			}
			for _, f := range findings {
				tb.Comment(f.reason)
				if err := tb.Append(cells(f)); err != nil {
					t.Fatal(err)
				}
			}
			return tb
		}
	}
	render := func(table func(*Layout) *Table, width int, full bool) string {
		var b bytes.Buffer
		if err := table(&Layout{Writer: &b, Width: width, Full: full}).Render(); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	tests := []struct {
		name  string
		width int
		full  bool
	}{
		{"cut to 60 columns", 60, false},
		{"120 columns", 120, false},
		{"wide, cells whole", 60, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := render(byHand, tt.width, tt.full)
			if strings.Count(want, "# namespace ns-3 ") != 1 {
				t.Fatalf("each reason is not said once:\n%s", want)
			}
			for name, table := range map[string]func(*Layout) *Table{"in memory": grouped(false), "spilled": grouped(true)} {
				if got := render(table, tt.width, tt.full); got != want {
					t.Errorf("grouped %s differs from grouped by hand:\n%s", name, firstDiff(want, got))
				}
			}
		})
	}
}

// TestOrDash: an empty value is a dash.
func TestOrDash(t *testing.T) {
	for in, want := range map[string]string{"": "-", "kb-system": "kb-system", " ": " "} {
		if got := OrDash(in); got != want {
			t.Errorf("OrDash(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestEmptyFirst: the empty reason goes first, the others keep their order.
func TestEmptyFirst(t *testing.T) {
	tests := []struct{ in, want []string }{
		{nil, nil},
		{[]string{"b", "a"}, []string{"b", "a"}},
		{[]string{"b", "", "a"}, []string{"", "b", "a"}},
		{[]string{"b", "a", ""}, []string{"", "b", "a"}},
	}
	for _, tt := range tests {
		got := append([]string(nil), tt.in...)
		EmptyFirst(got)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("EmptyFirst(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestTableChunksLayOutAsOne: a table rendered a chunk of rows at a time is
// the table rendered whole, cut cells, wide characters and comments included.
func TestTableChunksLayOutAsOne(t *testing.T) {
	render := func(chunk int, full bool, width int) string {
		old := tableChunk
		tableChunk = chunk
		defer func() { tableChunk = old }()
		var b bytes.Buffer
		tb := New(&Layout{Writer: &b, Width: width, Full: full}, "NAMESPACE", "KIND", "NAME", "REASON")
		for i := 0; i < 1300; i++ {
			if i%97 == 0 {
				tb.Comment(fmt.Sprintf("group %d: a reason long enough to wrap over the width of the table, said once above its rows", i))
			}
			name := strings.Repeat("n", i%53) + fmt.Sprint(i)
			if i%7 == 0 {
				name = "名前" + name
			}
			_ = tb.Append([]string{fmt.Sprintf("ns-%d", i%13), "Pod", name, strings.Repeat("why ", i%31)})
		}
		tb.Comment("trailing comment")
		if err := tb.Render(); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	tests := []struct {
		name  string
		full  bool
		width int
	}{
		{"cut to 80 columns", false, 80},
		{"cut to 120 columns", false, 120},
		{"wide, cells whole", true, 120},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			whole, chunked := render(1<<30, tt.full, tt.width), render(100, tt.full, tt.width)
			if whole != chunked {
				t.Errorf("chunked table differs from the whole one:\n%s", firstDiff(whole, chunked))
			}
		})
	}
}

// firstDiff says where a and b first differ, by line.
func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) && i < len(bl); i++ {
		if al[i] != bl[i] {
			return fmt.Sprintf("line %d:\nwant: %q\ngot:  %q", i+1, al[i], bl[i])
		}
	}
	return fmt.Sprintf("%d lines wanted, %d got", len(al), len(bl))
}
