package etcdscan

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Counter is a Store that can count the keys of a range cheaply, so that a
// scan can say what share of its range it has read.
type Counter interface {
	Count(ctx context.Context, start, end string) (int64, error)
}

// Count implements Counter: a count-only range at the store's revision.
func (s *EtcdStore) Count(ctx context.Context, start, end string) (int64, error) {
	resp, err := s.kv.Get(ctx, start, clientv3.WithRange(end), clientv3.WithRev(s.rev), clientv3.WithCountOnly())
	if err != nil {
		return 0, err
	}
	return resp.Count, nil
}

// progressEvery is how many keys a scan reads between progress reports.
const progressEvery = 4096

// progress reports the keys read so far, and the range's total when the
// store can count it (0 when it cannot).
func (s *scan) progress(ctx context.Context, start, end string) func() {
	if s.opts.Progress == nil {
		return func() {}
	}
	var total int64
	if c, ok := s.store.(Counter); ok {
		total, _ = c.Count(ctx, start, end)
	}
	n := 0
	return func() {
		n++
		if n%progressEvery == 0 {
			s.opts.Progress(n, int(total))
		}
	}
}
