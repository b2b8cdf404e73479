package render

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// TestEveryTenth: a line every tenth of the total, and the last, whatever
// the total.
func TestEveryTenth(t *testing.T) {
	for _, tt := range []struct {
		total int
		want  int
	}{{3, 3}, {10, 10}, {100, 10}, {105, 11}} {
		var b bytes.Buffer
		p := EveryTenth(&b, "rewrote", tt.total)
		for i := 1; i <= tt.total; i++ {
			p(i, tt.total)
		}
		lines := strings.Split(strings.TrimSpace(b.String()), "\n")
		if len(lines) != tt.want || lines[len(lines)-1] != fmt.Sprintf("rewrote %d of %d", tt.total, tt.total) {
			t.Errorf("total %d: %d lines, last %q; want %d", tt.total, len(lines), lines[len(lines)-1], tt.want)
		}
	}
}
