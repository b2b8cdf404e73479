package table

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

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

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) && i < len(bl); i++ {
		if al[i] != bl[i] {
			return fmt.Sprintf("line %d:\nwhole:   %q\nchunked: %q", i+1, al[i], bl[i])
		}
	}
	return fmt.Sprintf("%d lines whole, %d chunked", len(al), len(bl))
}
