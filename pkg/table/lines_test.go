package table

import (
	"reflect"
	"testing"

	"github.com/regghost/regghost/pkg/spill"
)

// TestLineCodec: a spilled table line reads back as it was; a cut one is
// an error.
func TestLineCodec(t *testing.T) {
	tests := []struct {
		name string
		line tableLine
	}{
		{"a row", tableLine{cells: []string{"kb-system", "Pod", "api-0", "", "3h"}}},
		{"a row of no cells", tableLine{cells: []string{}}},
		{"a comment", tableLine{comment: "namespace kb-system does not exist", isComment: true}},
		{"an empty comment", tableLine{comment: "", isComment: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := encodeLine(tt.line)
			got, err := decodeLine(raw)
			if err != nil || !reflect.DeepEqual(got, tt.line) {
				t.Fatalf("%+v read back as %+v, %v", tt.line, got, err)
			}
			for n := range len(raw) {
				if _, err := decodeLine(raw[:n]); err == nil {
					t.Errorf("%+v cut to %d of %d bytes reads back", tt.line, n, len(raw))
				}
			}
		})
	}
}

// TestLineStores: a spill file gives back a table's lines as memory does,
// in order, or by group: the rows before any comment first, then each
// comment once, in the order it first came, above all its rows.
func TestLineStores(t *testing.T) {
	row := func(cells ...string) tableLine { return tableLine{cells: cells} }
	comment := func(text string) tableLine { return tableLine{comment: text, isComment: true, raw: text} }
	added := []tableLine{
		row("before any comment"),
		comment("b"), row("b1"),
		comment("a"), row("a1"), row("a2"),
		comment("b"), row("b2"),
		comment(""), row("empty1"),
		comment("a"), comment("a"), row("a3"),
		comment("c"),
	}
	grouped := []tableLine{
		row("before any comment"),
		comment("b"), row("b1"), row("b2"),
		comment("a"), row("a1"), row("a2"), row("a3"),
		comment(""), row("empty1"),
		comment("c"),
	}
	tests := []struct {
		name  string
		store func(*spill.File) lineStore
		want  []tableLine
	}{
		{"in memory", func(*spill.File) lineStore { return &memLines{} }, added},
		{"spilled", func(f *spill.File) lineStore { return &spilledLines{f: f} }, added},
		{"grouped in memory", func(*spill.File) lineStore { return &memGroups{} }, grouped},
		{"grouped and spilled", func(f *spill.File) lineStore { return &groupedLines{f: f} }, grouped},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := spill.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			s := tt.store(f)
			for _, l := range added {
				if err := s.add(l); err != nil {
					t.Fatal(err)
				}
			}
			var got []tableLine
			if err := s.each(func(l tableLine) error { got = append(got, l); return nil }); err != nil {
				t.Fatal(err)
			}
			// A spill file keeps a comment as it is printed, not as given.
			for i := range got {
				got[i].raw = got[i].comment
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("read back\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}
