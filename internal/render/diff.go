package render

import (
	"fmt"
	"io"

	"github.com/regghost/regghost/pkg/dbfile"
	"github.com/regghost/regghost/pkg/plural"
	"github.com/regghost/regghost/pkg/table"
)

// Diff is the differences between the db files a and b, named aName and
// bName, under prefix, in every form -o can ask for; its rows are the keys
// that differ.
func Diff(aName, bName string, a, b *dbfile.Store, changes []dbfile.Change, prefix string) Output {
	return Output{Doc: NonNil(changes), Rows: RowsOf(changes, func(ch *dbfile.Change) string { return ch.Key }), Human: func(out io.Writer, _, _ bool) error {
		return writeDiff(out, aName, bName, a, b, changes, prefix)
	}}
}

// writeDiff writes the table of differences, then one line that counts them.
func writeDiff(out io.Writer, aName, bName string, a, b *dbfile.Store, changes []dbfile.Change, prefix string) error {
	counts := map[string]int{}
	if len(changes) > 0 {
		t := table.New(out, "KEY", "CHANGE", "REV A", "REV B", "BYTES A", "BYTES B")
		for _, ch := range changes {
			counts[ch.Kind]++
			_ = t.Append([]string{ch.Key, ch.Kind, fmt.Sprint(ch.RevA), fmt.Sprint(ch.RevB), fmt.Sprint(ch.SizeA), fmt.Sprint(ch.SizeB), table.OrDash(ch.HashA), table.OrDash(ch.HashB)})
		}
		if err := t.Render(); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "%s (revision %d, %s) -> %s (revision %d, %s): %d added, %d removed, %d changed under %s\n",
		aName, a.Revision(), plural.Of(a.Len(), "key"), bName, b.Revision(), plural.Of(b.Len(), "key"), counts["added"], counts["removed"], counts["changed"], prefix)
	return nil
}
