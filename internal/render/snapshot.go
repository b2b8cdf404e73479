package render

import (
	"fmt"
	"io"

	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/plural"
	"github.com/regghost/regghost/pkg/table"
)

// describeSnapshot says what a verified snapshot holds, in two lines (its
// path apart, so that it is written whole): its size, revision and keys,
// then its sha256.
func describeSnapshot(info *backup.SnapshotInfo) []string {
	if info.Format == "logical" {
		return []string{fmt.Sprintf("logical snapshot (%s has no snapshot RPC): %d bytes, revision %d, %s (verified)",
			info.Datastore, info.Size, info.Revision, plural.Of(int(info.TotalKeys), "key")), "sha256 " + info.SHA256}
	}
	return []string{fmt.Sprintf("%d bytes, revision %d, %s, hash %d (verified)", info.Size, info.Revision, plural.Of(int(info.TotalKeys), "key"), info.Hash),
		"sha256 " + info.SHA256}
}

// SnapshotOutput is a verified snapshot in every form -o can ask for; its
// one row is the snapshot file.
func SnapshotOutput(heading string, info *backup.SnapshotInfo) Output {
	return Output{Doc: info, Rows: []Row{{Name: info.Path, Obj: info}},
		Human: func(w io.Writer, _, _ bool) error { Snapshot(w, heading, info); return nil }}
}

// Snapshot writes heading followed by the snapshot's path (on the next
// line when they do not fit together), then what it holds, indented.
func Snapshot(out io.Writer, heading string, info *backup.SnapshotInfo) {
	table.Wrapped(out, heading+info.Path)
	for _, l := range describeSnapshot(info) {
		table.Para(out, "  ", "    ", l)
	}
}
