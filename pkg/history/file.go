package history

import (
	"context"

	"github.com/regghost/regghost/pkg/dbfile"
)

// FromFile reads the history of sel from a db file: every revision since the
// file's last compaction, in one pass over its revisions that reads the
// values of the selected keys only.
func FromFile(ctx context.Context, f *dbfile.File, sel Selection, o Options) (*History, error) {
	info := f.Info()
	h := &History{Selection: sel, Source: info.Path, From: o.From, Revision: info.Revision, CompactRevision: info.CompactRevision}
	h.Start = max(o.From, info.CompactRevision, 1)
	h.Compacted = info.CompactRevision > 0 && max(o.From, 1) < info.CompactRevision
	b := newBuilder(h, o)
	err := f.Revisions(ctx, sel.Match, func(r dbfile.Revision) error {
		return b.add(ctx, raw{rev: r.Main, tombstone: r.Tombstone, kv: r.KV})
	})
	if err != nil {
		return nil, err
	}
	if err := b.finish(ctx); err != nil {
		return nil, err
	}
	return h, nil
}
