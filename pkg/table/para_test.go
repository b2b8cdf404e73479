package table

import (
	"bytes"
	"strings"
	"testing"
)

// TestPara: a paragraph is wrapped to the width, its first line after
// first, the others after rest, its text escaped.
func TestPara(t *testing.T) {
	tests := []struct {
		name              string
		width             int
		first, rest, text string
		want              string
	}{
		{"what fits is one line", 80, "Would be refused: ", "  ", "a reason.", "Would be refused: a reason.\n"},
		{"continuation lines start with rest", 30, "Would be refused: ", "  ", "the namespace kb-system is gone and its objects stay.",
			"Would be refused: the\n  namespace kb-system is gone\n  and its objects stay.\n"},
		{"the first line ends no further right than the others", 20, "", "    ", "aaaa bbbb cccc dddd eeee",
			"aaaa bbbb cccc\n    dddd eeee\n"},
		{"the text is escaped, first and rest are not", 80, "\t", "  ", "evil\x1b[2Jname", "\tevil\\u001b[2Jname\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			Para(&Layout{Writer: &b, Width: tt.width}, tt.first, tt.rest, tt.text)
			if b.String() != tt.want {
				t.Errorf("got\n%q\nwant\n%q", b.String(), tt.want)
			}
		})
	}
	var b bytes.Buffer
	// The first line is as narrow as the indented ones.
	Wrapped(&Layout{Writer: &b, Width: 20}, "aaaa bbbb cccc dddd eeee ffff")
	if want := "aaaa bbbb cccc\n  dddd eeee ffff\n"; b.String() != want {
		t.Errorf("Wrapped wrote %q, want %q", b.String(), want)
	}
}

// TestCommands: a command that does not fit is broken before its options
// with backslashes; one with a single flag, or that cannot fit, is written
// whole; a label shares its line with a command that fits.
func TestCommands(t *testing.T) {
	lone := "regghost snapshot restore /var/lib/regghost/backups/20261203T143626Z-namespace-kb-system/snapshot.jsonl --confirm"
	long := "regghost snapshot restore /" + strings.Repeat("x", 100) + "/snapshot.jsonl --confirm"
	tests := []struct {
		name  string
		write func(*Layout)
		want  string
	}{
		// Every line fits but those of the two written whole.
		{"broken before its options", func(out *Layout) {
			Command(out, "  ", "etcdutl snapshot restore /var/lib/regghost/backups/x/snapshot.db --data-dir /var/lib/etcd-restored --bump-revision 1000000000 --mark-compacted")
		}, "  etcdutl snapshot restore /var/lib/regghost/backups/x/snapshot.db \\\n" +
			"      --data-dir /var/lib/etcd-restored --bump-revision 1000000000 \\\n" +
			"      --mark-compacted\n"},
		{"one flag is not broken", func(out *Layout) { Command(out, "  ", lone) }, "  " + lone + "\n"},
		{"longer than the screen is written whole", func(out *Layout) { Command(out, "  ", long) }, "  " + long + "\n"},
		{"a path too long to share its line gets its own", func(out *Layout) {
			Command(out, "  ", "etcdutl snapshot restore /"+strings.Repeat("x", 80)+"/snapshot.db --data-dir /d --bump-revision 1 --mark-compacted")
		}, "  etcdutl snapshot restore \\\n      /" + strings.Repeat("x", 80) + "/snapshot.db \\\n      --data-dir /d --bump-revision 1 --mark-compacted\n"},
		{"escaped", func(out *Layout) { Command(out, "", "rm \x1b[2J") }, "rm \\u001b[2J\n"},
		{"a label beside a command that fits", func(out *Layout) { LabeledCommand(out, "Undo:", "regghost restore /b --confirm") },
			"Undo:  regghost restore /b --confirm\n"},
		{"a label above a command that does not", func(out *Layout) { LabeledCommand(out, "Undo these deletes:", lone) },
			"Undo these deletes:\n  " + lone + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			tt.write(&Layout{Writer: &b, Width: 80})
			if b.String() != tt.want {
				t.Errorf("got\n%s\nwant\n%s", b.String(), tt.want)
			}
			for _, l := range strings.Split(b.String(), "\n") {
				if TextWidth(l) > 80 && !strings.HasSuffix(l, " --confirm") && !strings.Contains(l, strings.Repeat("x", 80)) {
					t.Errorf("line of %d columns: %q", TextWidth(l), l)
				}
			}
		})
	}
}
