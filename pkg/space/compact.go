package space

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// CompactRevision finds etcd's compacted revision, the oldest it still
// reads at (0: never compacted), at or below rev. etcd says no number:
// a read below it fails as compacted, so the revision is found by
// bisection, with count-only reads of one key (about 30 small requests).
func CompactRevision(ctx context.Context, kv clientv3.KV, rev int64) (int64, error) {
	readable := func(r int64) (bool, error) {
		_, err := kv.Get(ctx, "\x00", clientv3.WithRev(r), clientv3.WithCountOnly())
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, rpctypes.ErrCompacted):
			return false, nil
		}
		return false, fmt.Errorf("read at revision %d: %w", r, err)
	}
	if ok, err := readable(1); err != nil || ok {
		return 0, err
	}
	// Revision lo is compacted, hi is readable.
	lo, hi := int64(1), rev
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		ok, err := readable(mid)
		if err != nil {
			return 0, err
		}
		if ok {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, nil
}
