package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/regghost/regghost/pkg/notice"
)

// TestNoticesLayout: each notice a run says is one "regghost: " line (a
// warning's "regghost: warning: "), wrapped off a terminal at 120
// columns with its continuation lines indented.
func TestNoticesLayout(t *testing.T) {
	long := strings.Repeat("word ", 40)
	for _, tc := range []struct {
		name string
		say  func(notice.Func)
		want string
	}{
		{"info", func(f notice.Func) { f.Info("using etcd 127.0.0.1:2379") }, "regghost: using etcd 127.0.0.1:2379\n"},
		{"warning", func(f notice.Func) { f.Warn("etcd's NOSPACE alarm is raised") }, "regghost: warning: etcd's NOSPACE alarm is raised\n"},
		{"a percent sign is text", func(f notice.Func) { f.Info("100% of the keys") }, "regghost: 100% of the keys\n"},
		{"wrapped", func(f notice.Func) { f.Info(strings.TrimSpace(long)) }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			tc.say(Notices(&b))
			if tc.want != "" && b.String() != tc.want {
				t.Fatalf("got %q, want %q", b.String(), tc.want)
			}
			lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
			for i, l := range lines {
				if len(l) > 120 || (i > 0 && !strings.HasPrefix(l, "  ")) || (i == 0 && !strings.HasPrefix(l, "regghost: ")) {
					t.Errorf("line %d %q", i, l)
				}
			}
			if tc.name == "wrapped" && len(lines) < 2 {
				t.Errorf("a %d-character notice was not wrapped: %q", len(long), b.String())
			}
		})
	}
	// A nil Func drops what is said.
	var none notice.Func
	none.Info("nothing")
	none.Warn("nothing")
}
