package etcdscan

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// NewEtcdStoreAt pins an older revision of the cluster: every read is made
// at rev. A revision etcd has compacted away, or one it has not reached,
// is an error that says which revisions can be read.
func NewEtcdStoreAt(ctx context.Context, cli *clientv3.Client, pageSize, rev int64) (*EtcdStore, error) {
	s, err := NewEtcdStore(ctx, cli, pageSize)
	if err != nil {
		return nil, err
	}
	if rev > s.rev {
		return nil, &AheadError{Rev: rev, Current: s.rev}
	}
	if _, err := cli.Get(ctx, "\x00", clientv3.WithRev(rev), clientv3.WithCountOnly()); err != nil {
		if errors.Is(err, rpctypes.ErrCompacted) {
			if c, cerr := CompactedRevision(ctx, cli); cerr == nil {
				return nil, fmt.Errorf("revision %d is compacted: etcd keeps revisions %d to %d (kube-apiserver compacts every 5 minutes by default); read an older state from a snapshot file", rev, c, s.rev)
			}
			return nil, fmt.Errorf("revision %d is compacted; read an older state from a snapshot file", rev)
		}
		return nil, fmt.Errorf("read etcd at revision %d: %w", rev, err)
	}
	s.rev = rev
	return s, nil
}

// AheadError is NewEtcdStoreAt's refusal of a revision the member has not
// reached yet (a member behind, or a revision of another cluster).
type AheadError struct {
	Rev, Current int64
}

func (e *AheadError) Error() string {
	return fmt.Sprintf("revision %d is ahead of etcd's current revision %d", e.Rev, e.Current)
}

// CompactedRevision is the revision etcd last compacted at: the oldest one
// it can still read (0 when it never compacted). See CompactedRevisionAt.
func CompactedRevision(ctx context.Context, cli clientv3.KV) (int64, error) {
	resp, err := cli.Get(ctx, "\x00", clientv3.WithCountOnly())
	if err != nil {
		return 0, err
	}
	return CompactedRevisionAt(ctx, cli, resp.Header.Revision)
}

// CompactedRevisionAt is the revision etcd last compacted at, at or below
// rev (0 when it never compacted). etcd says no number: it is found by
// reading one absent key at revisions chosen by bisection, a read below the
// compacted revision failing with ErrCompacted. About 30 tiny reads.
func CompactedRevisionAt(ctx context.Context, cli clientv3.KV, rev int64) (int64, error) {
	readable := func(r int64) (bool, error) {
		_, err := cli.Get(ctx, "\x00", clientv3.WithRev(r), clientv3.WithCountOnly())
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, rpctypes.ErrCompacted):
			return false, nil
		}
		return false, fmt.Errorf("read at revision %d: %w", r, err)
	}
	if ok, err := readable(1); ok || err != nil {
		return 0, err
	}
	lo, hi := int64(1), rev // lo is compacted, hi readable
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
