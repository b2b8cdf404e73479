package etcdtest

import "strings"

// WithoutUsing is regghost's stderr without the line that says what it
// uses (every command that connects writes it first, wrapped, its
// continuation lines indented): what a test of an error being one line
// counts.
func WithoutUsing(errOut string) string {
	var keep []string
	using := false
	for _, l := range strings.SplitAfter(errOut, "\n") {
		switch {
		case strings.HasPrefix(l, "regghost: using "):
			using = true
		case using && strings.HasPrefix(l, "  "):
		default:
			using = false
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "")
}
