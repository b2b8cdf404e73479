package dbfile

import (
	"context"
	"fmt"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/internal/etcdtest"
)

// TestRevisionSizesAndPages: RevisionSizes sees every revision Revisions
// does, with the same key, delete and value length; a file's pages in use
// fit in it, and deleting most of its keys leaves them in use until a
// compaction (revisions are kept), after which free pages appear.
func TestRevisionSizesAndPages(t *testing.T) {
	cli, ep := etcdtest.Start(t)
	ctx := context.Background()
	for i := range 200 {
		etcdtest.Put(t, cli, fmt.Sprintf("/registry/configmaps/ns/c%03d", i), strings.Repeat("v", 2000+i))
	}
	for i := range 150 {
		if _, err := cli.Delete(ctx, fmt.Sprintf("/registry/configmaps/ns/c%03d", i)); err != nil {
			t.Fatal(err)
		}
	}
	before := saveSnapshot(t, ep)
	resp, err := cli.Get(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	// Physical: the compaction has freed its pages before the snapshot
	// (without it, it may still be running on a busy machine).
	if _, err := cli.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	after := saveSnapshot(t, ep)
	type rev struct {
		key      string
		del      bool
		valueLen int
	}
	var inUse []int64
	for _, path := range []string{before, after} {
		f, err := OpenFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var want, got []rev
		if err := f.Revisions(ctx, nil, func(r Revision) error {
			want = append(want, rev{string(r.KV.Key), r.Tombstone, len(r.KV.Value)})
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if err := f.RevisionSizes(ctx, func(key []byte, del bool, n int) error {
			got = append(got, rev{string(key), del, n})
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) || len(got) == 0 {
			t.Errorf("%s: RevisionSizes saw %d revisions, Revisions %d, or they differ", path, len(got), len(want))
		}
		p, err := f.Pages()
		if err != nil {
			t.Fatal(err)
		}
		if p.PageSize <= 0 || p.Size != f.Info().Size || p.InUse <= 0 || p.InUse > p.Size {
			t.Errorf("%s: pages %+v of a file of %d bytes", path, p, f.Info().Size)
		}
		inUse = append(inUse, p.InUse)
		f.Close()
	}
	if inUse[1] >= inUse[0] {
		t.Errorf("pages in use %d before the compaction, %d after: the compaction freed none", inUse[0], inUse[1])
	}
}
