// Package table lays out text for a terminal; that is its one job. It
// knows how wide the screen is (Width, TermWidth, Layout) and how many
// columns text takes on it (TextWidth: wide characters, combining marks);
// it cuts text to a width, marking the cut with …; it wraps paragraphs
// (Wrap, Para, Wrapped) and commands to copy (Command, LabeledCommand); it
// escapes untrusted text (Escape, SafeWriter: names and values come from
// etcd), so that what it measures is what is printed; and it lays out
// tables in kubectl's layout (Table), cut to fit, with rows grouped under
// comment lines and spilled to disk when there are too many for memory.
//
// It knows nothing of what it lays out: the commands in cmd say that.
package table
