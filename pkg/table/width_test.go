package table

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestTextWidth: text takes columns on a terminal, not bytes or runes.
func TestTextWidth(t *testing.T) {
	tests := []struct {
		name string
		s    string
		want int
	}{
		{"empty", "", 0},
		{"ASCII", "kb-system", 9},
		{"wide characters take two", "名前", 4},
		{"a precomposed letter takes one", "é", 1},
		{"a combining mark takes none", "e\u0301", 1},
		{"a zero-width space takes none", "a\u200bb", 2},
		{"the ellipsis takes one", ellipsis, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := TextWidth(tt.s); got != tt.want {
				t.Errorf("TextWidth(%q) = %d, want %d", tt.s, got, tt.want)
			}
		})
	}
}

// TestCut: a cut keeps to its width in columns, never splits a rune, and
// is marked with …; cutMiddle keeps the start and the end, cutEnd the start.
func TestCut(t *testing.T) {
	cuts := []struct {
		name string
		cut  func(string, int) string
	}{{"cutEnd", cutEnd}, {"cutMiddle", cutMiddle}}
	for _, s := range []string{
		"/registry/configmaps/kb-system/settings-for-the-primary-cluster",
		"名前空間の設定マップ名前空間の設定マップ名前空間の設定マップ",
		`evil\u001b]0;pwned\u0007\u001b[2J\u009b31m\u000dname`,
		"ünïcödé-ünïcödé-ünïcödé-ünïcödé-ünïcödé-ünïcödé",
	} {
		for w := 1; w <= TextWidth(s)+1; w++ {
			for _, c := range cuts {
				got := c.cut(s, w)
				if TextWidth(got) > w || !utf8.ValidString(got) {
					t.Errorf("%s(%q, %d) = %q: %d columns", c.name, s, w, got, TextWidth(got))
				}
				if w >= TextWidth(s) && got != s {
					t.Errorf("%s(%q, %d) = %q, want it whole", c.name, s, w, got)
				}
				if w < TextWidth(s) && !strings.Contains(got, ellipsis) {
					t.Errorf("%s(%q, %d) = %q: the cut is not marked", c.name, s, w, got)
				}
			}
		}
	}
	tests := []struct {
		name string
		cut  func(string, int) string
		s    string
		w    int
		want string
	}{
		{"middle keeps a key's start and its name", cutMiddle, "/registry/persistentvolumes/pvc-8730bc07-1390-4a1e-9e63-c8346b2f7c94", 40, "/registry/persisten…1e-9e63-c8346b2f7c94"},
		{"middle narrower than 8 columns cuts the end", cutMiddle, "abcdefghijkl", 7, "abcdef…"},
		{"end keeps the start", cutEnd, "the quick brown fox", 10, "the quick…"},
		{"end drops the blank before the mark", cutEnd, "the quick brown fox", 11, "the quick…"},
		{"end does not split a wide character", cutEnd, "名前空間", 4, "名…"},
		{"what fits is whole", cutEnd, "abc", 3, "abc"},
		{"no room leaves nothing", cutEnd, "abc", 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.cut(tt.s, tt.w); got != tt.want {
				t.Errorf("cut(%q, %d) = %q, want %q", tt.s, tt.w, got, tt.want)
			}
		})
	}
}

// TestWrap: lines fit, break at spaces, and lose nothing but blanks.
func TestWrap(t *testing.T) {
	tests := []struct {
		name  string
		s     string
		width int
		want  []string
	}{
		{"what fits is one line", "a b c", 10, []string{"a b c"}},
		{"empty is one empty line", "", 10, []string{""}},
		{"breaks at spaces", "the quick brown fox jumps", 10, []string{"the quick", "brown fox", "jumps"}},
		{"breaks a long word where the line ends", "abcdefghijkl", 5, []string{"abcde", "fghij", "kl"}},
		{"does not split a wide character", "名前空間名前", 5, []string{"名前", "空間", "名前"}},
		{"a width below one is one", "ab", 0, []string{"a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Wrap(tt.s, tt.width); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Wrap(%q, %d) = %q, want %q", tt.s, tt.width, got, tt.want)
			}
		})
	}
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
// is down to a few words; balanced, all the widest together; a header is
// never cut.
func TestFitColumns(t *testing.T) {
	tests := []struct {
		name                  string
		natural, least, first []int
		width                 int
		balanced              bool
		want                  []int
	}{
		{"what fits is whole", []int{40, 10, 60}, []int{3, 7, 6}, []int{2}, 120, false, []int{40, 10, 60}},
		{"the prose column is cut first", []int{40, 10, 200}, []int{3, 7, 6}, []int{2}, 120, false, []int{40, 10, 66}},
		{"then the widest others", []int{110, 10, 200}, []int{3, 7, 6}, []int{2}, 120, false, []int{86, 10, proseMin}},
		{"balanced cuts the widest of all", []int{110, 10, 200}, []int{3, 7, 6}, []int{2}, 120, true, []int{53, 10, 53}},
		{"headers keep their width past the screen", []int{30, 30, 30}, []int{25, 25, 25}, []int{2}, 40, false, []int{25, 25, 25}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fitColumns(tt.natural, tt.least, tt.first, tt.width, tt.balanced); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("fitColumns = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestWidth: output that is not a terminal is laid out for 120 columns,
// through a SafeWriter too; a Layout says its own width and whether cells
// are whole.
func TestWidth(t *testing.T) {
	file, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	tests := []struct {
		name  string
		out   io.Writer
		width int
		full  bool
	}{
		{"a buffer", &bytes.Buffer{}, MaxWidth, false},
		{"a file", file, MaxWidth, false},
		{"a SafeWriter", NewSafeWriter(&bytes.Buffer{}), MaxWidth, false},
		{"a Layout", &Layout{Writer: &bytes.Buffer{}, Width: 80}, 80, false},
		{"a Layout with whole cells", &Layout{Writer: &bytes.Buffer{}, Width: 100, Full: true}, 100, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if w, full := Width(tt.out), Full(tt.out); w != tt.width || full != tt.full {
				t.Errorf("Width, Full = %d, %v, want %d, %v", w, full, tt.width, tt.full)
			}
		})
	}
	if w := TermWidth(file); w != MaxWidth {
		t.Errorf("TermWidth of a file = %d", w)
	}
}
