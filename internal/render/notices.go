package render

import (
	"io"

	"github.com/regghost/regghost/pkg/notice"
	"github.com/regghost/regghost/pkg/table"
)

// Notices lays out each notice a run says on w: "regghost: " (and
// "warning: " for a warning) before its text, wrapped to the screen (120
// columns off a terminal), continuation lines indented.
func Notices(w io.Writer) notice.Func {
	return func(n notice.Notice) { table.Wrapped(w, "regghost: "+n.String()) }
}
