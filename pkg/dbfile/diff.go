package dbfile

import (
	"bytes"
	"context"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

// Change is one key that differs between two db files.
type Change struct {
	Key string `json:"key"`
	// Kind is "added" (only in b), "removed" (only in a) or "changed".
	Kind  string `json:"change"`
	RevA  int64  `json:"modRevisionA,omitempty"`
	RevB  int64  `json:"modRevisionB,omitempty"`
	SizeA int    `json:"bytesA,omitempty"`
	SizeB int    `json:"bytesB,omitempty"`
}

// Diff compares the live keys under prefix of two db files, walking both in
// key order. A key counts as changed when its bytes differ.
func Diff(ctx context.Context, a, b *Store, prefix string) ([]Change, error) {
	var av, bv []*mvccpb.KeyValue
	end := prefixEnd(prefix)
	collect := func(s *Store, dst *[]*mvccpb.KeyValue) error {
		return s.Range(ctx, prefix, end, false, func(kv *mvccpb.KeyValue) error { *dst = append(*dst, kv); return nil })
	}
	if err := collect(a, &av); err != nil {
		return nil, fmt.Errorf("read first db: %w", err)
	}
	if err := collect(b, &bv); err != nil {
		return nil, fmt.Errorf("read second db: %w", err)
	}
	var out []Change
	i, j := 0, 0
	for i < len(av) || j < len(bv) {
		switch {
		case j == len(bv) || (i < len(av) && string(av[i].Key) < string(bv[j].Key)):
			out = append(out, Change{Key: string(av[i].Key), Kind: "removed", RevA: av[i].ModRevision, SizeA: len(av[i].Value)})
			i++
		case i == len(av) || string(bv[j].Key) < string(av[i].Key):
			out = append(out, Change{Key: string(bv[j].Key), Kind: "added", RevB: bv[j].ModRevision, SizeB: len(bv[j].Value)})
			j++
		default:
			if !bytes.Equal(av[i].Value, bv[j].Value) {
				out = append(out, Change{Key: string(av[i].Key), Kind: "changed", RevA: av[i].ModRevision, RevB: bv[j].ModRevision, SizeA: len(av[i].Value), SizeB: len(bv[j].Value)})
			}
			i++
			j++
		}
	}
	return out, nil
}

func prefixEnd(prefix string) string {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1])
		}
	}
	return ""
}
