package table

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestCut: a cut keeps to its width in columns, never splits a rune, and
// is marked with ….
func TestCut(t *testing.T) {
	for _, s := range []string{
		"/registry/configmaps/kb-system/settings-for-the-primary-cluster",
		"名前空間の設定マップ名前空間の設定マップ名前空間の設定マップ",
		`evil\u001b]0;pwned\u0007\u001b[2J\u009b31m\u000dname`,
		"ünïcödé-ünïcödé-ünïcödé-ünïcödé-ünïcödé-ünïcödé",
	} {
		for w := 1; w <= TextWidth(s)+1; w++ {
			for name, cut := range map[string]func(string, int) string{"cutEnd": cutEnd, "cutMiddle": cutMiddle} {
				got := cut(s, w)
				if TextWidth(got) > w || !utf8.ValidString(got) {
					t.Errorf("%s(%q, %d) = %q: %d columns", name, s, w, got, TextWidth(got))
				}
				if w >= TextWidth(s) && got != s {
					t.Errorf("%s(%q, %d) = %q, want it whole", name, s, w, got)
				}
				if w < TextWidth(s) && !strings.Contains(got, ellipsis) {
					t.Errorf("%s(%q, %d) = %q: the cut is not marked", name, s, w, got)
				}
			}
		}
	}
	if got := cutMiddle("/registry/persistentvolumes/pvc-8730bc07-1390-4a1e-9e63-c8346b2f7c94", 40); got != "/registry/persisten…1e-9e63-c8346b2f7c94" {
		t.Errorf("cutMiddle keeps %q", got)
	}
	if TextWidth("名前") != 4 || TextWidth("é") != 1 || TextWidth("e\u0301") != 1 {
		t.Error("TextWidth does not count terminal columns")
	}
}

// TestWrap: lines fit, break at spaces, and lose nothing but blanks.
func TestWrap(t *testing.T) {
	text := "the PersistentVolume controller releases PV pvc-8730bc07-1390-4a1e-9e63-c8346b2f7c94 (reclaim policy Delete) and deletes its storage (/tmp/hostpath_pv/20edbd75-3816-4b92-ba9b-f7bc390900e9)"
	for _, w := range []int{20, 40, 80, 118} {
		lines := wrapLines(text, w-10, w)
		for i, l := range lines {
			limit := w
			if i == 0 {
				limit = w - 10
			}
			if TextWidth(l) > limit {
				t.Errorf("width %d: line %q is %d columns", w, l, TextWidth(l))
			}
		}
		if strings.Join(lines, " ") != text && w > 60 {
			t.Errorf("width %d: wrapped text differs:\n%s", w, strings.Join(lines, "\n"))
		}
	}
}

// TestFitColumns: the prose column is cut first; the others only when it
// is down to a few words.
func TestFitColumns(t *testing.T) {
	got := fitColumns([]int{40, 10, 200}, []int{3, 7, 6}, []int{2}, 120, false)
	if got[0] != 40 || got[1] != 10 || got[2] != 120-40-10-4 {
		t.Errorf("widths %v", got)
	}
	got = fitColumns([]int{110, 10, 200}, []int{3, 7, 6}, []int{2}, 120, false)
	if got[2] != proseMin || got[0]+got[1]+got[2]+4 > 120 {
		t.Errorf("widths %v", got)
	}
	got = fitColumns([]int{110, 10, 200}, []int{3, 7, 6}, []int{2}, 120, true)
	if got[0] != got[2] || got[0]+got[1]+got[2]+4 > 120 {
		t.Errorf("balanced widths %v", got)
	}
}

// TestCommands: a command that does not fit is broken before its options
// with backslashes; one with a single flag, or that cannot fit, is written
// whole.
func TestCommands(t *testing.T) {
	var b bytes.Buffer
	Command(&Layout{Writer: &b, Width: 80}, "  ", "etcdutl snapshot restore /var/lib/regghost/backups/x/snapshot.db --data-dir /var/lib/etcd-restored --bump-revision 1000000000 --mark-compacted")
	want := "  etcdutl snapshot restore /var/lib/regghost/backups/x/snapshot.db \\\n" +
		"      --data-dir /var/lib/etcd-restored --bump-revision 1000000000 \\\n" +
		"      --mark-compacted\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	for _, l := range strings.Split(b.String(), "\n") {
		if TextWidth(l) > 80 {
			t.Errorf("line of %d columns: %q", TextWidth(l), l)
		}
	}
	b.Reset()
	lone := "regghost snapshot restore /var/lib/regghost/backups/20261203T143626Z-namespace-kb-system/snapshot.jsonl --confirm"
	Command(&Layout{Writer: &b, Width: 80}, "  ", lone)
	if b.String() != "  "+lone+"\n" {
		t.Errorf("a command with one flag is broken: %q", b.String())
	}
	b.Reset()
	long := "regghost snapshot restore /" + strings.Repeat("x", 100) + "/snapshot.jsonl --confirm"
	Command(&Layout{Writer: &b, Width: 80}, "  ", long)
	if b.String() != "  "+long+"\n" {
		t.Errorf("a command longer than the screen is not written whole: %q", b.String())
	}
}

// TestTermWidth: output that is not a terminal is laid out for 120 columns.
func TestTermWidth(t *testing.T) {
	if w := TermWidth(&bytes.Buffer{}); w != MaxWidth {
		t.Errorf("TermWidth of a buffer = %d", w)
	}
	if w, full := layoutOf(NewSafeWriter(&bytes.Buffer{})); w != MaxWidth || full {
		t.Errorf("layoutOf(SafeWriter) = %d, %v", w, full)
	}
}
