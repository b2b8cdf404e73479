// Package textsafe makes text that comes from etcd safe to show. A key, and
// every string read from a stored value (a namespace or resource name, a
// finalizer, a class, a reason, a path), is whatever bytes were written: it
// may hold bytes that are not UTF-8 and control characters. Such text must
// not reach a terminal (an escape sequence would be obeyed), a Prometheus
// label (client_golang refuses a label value that is not UTF-8, and one bad
// series fails the whole scrape) or a JSON document (encoding/json turns
// every invalid byte into U+FFFD, so two different names print the same).
//
// Escape is the one rule for all of them: the table printer of cmd, the
// exporter's labels and anything else that renders such text call it.
package textsafe

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Escape returns s made valid UTF-8 with nothing a terminal obeys, and
// returns it unchanged (without copying) when it already is:
//
//   - every byte that is not part of a valid UTF-8 sequence becomes \xNN
//     (two lower-case hex digits), as Go's %q writes it;
//   - newline and tab become \n and \t;
//   - every other control character (C0, DEL, and C1, U+0080–U+009F, which
//     some terminals obey as escape sequences, CSI among them) becomes
//     \uNNNN;
//   - everything else, backslashes included, is kept as it is.
//
// Invalid bytes are escaped rather than replaced with U+FFFD (as
// strings.ToValidUTF8 would) so that the result stays recognisable and
// distinct: "ns-\xff" and "ns-\xfe" stay two names, so two damaged
// namespaces stay two table rows and two Prometheus series, where U+FFFD
// would fold them into one label set (which client_golang refuses as a
// duplicate, failing the scrape again). The result is deterministic and
// Escape(Escape(s)) == Escape(s).
//
// Escape is injective on real names but not on every string: backslashes
// are kept, so a valid name that spells out `ns-\xff` literally escapes to
// the same text as the invalid "ns-\xff". Kubernetes names cannot hold a
// backslash; a caller that keys on the result (the exporter's label sets)
// must still merge what lands on the same key rather than emit it twice.
func Escape(s string) string {
	if Clean(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case IsControl(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// Clean reports whether s is valid UTF-8 and holds no control character:
// whether Escape returns it unchanged.
func Clean(s string) bool {
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n <= 1) || IsControl(r) {
			return false
		}
		i += n
	}
	return true
}

// IsControl reports C0 controls, DEL and C1 controls (U+0080–U+009F, which
// some terminals obey as escape sequences, CSI among them).
func IsControl(r rune) bool { return r < 0x20 || (r >= 0x7f && r <= 0x9f) }
