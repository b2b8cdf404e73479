package repair

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/time/rate"
)

// DefaultBatchSize keeps each transaction well below etcd's default
// --max-txn-ops of 128.
const DefaultBatchSize = 64

// DefaultRate is how many transactions per second a purge or restore sends,
// so that a large repair does not starve the API server.
const DefaultRate = 20

// Pacing bounds the transactions a repair sends.
type Pacing struct {
	BatchSize int
	PerSecond float64
}

func (p Pacing) normalized() Pacing {
	if p.BatchSize <= 0 || p.BatchSize > 128 {
		p.BatchSize = DefaultBatchSize
	}
	if p.PerSecond <= 0 {
		p.PerSecond = DefaultRate
	}
	return p
}

// guardedTxn runs one transaction per batch with the compares and an
// operation per key; compares shared by several keys of a batch (the same
// namespace key that must stay absent) are sent once. When a batch's
// compares fail (some key or witness changed), it falls back to one
// transaction per key so every other key is still handled; done reports each
// key with whether its compares held.
func guardedTxn(ctx context.Context, kv clientv3.KV, pacing Pacing, n int,
	cmp func(i int) []clientv3.Cmp, op func(i int) clientv3.Op, done func(i int, ok bool)) error {
	pacing = pacing.normalized()
	lim := rate.NewLimiter(rate.Limit(pacing.PerSecond), 1)
	run := func(idx []int) (bool, error) {
		if err := lim.Wait(ctx); err != nil {
			return false, err
		}
		var cmps []clientv3.Cmp
		seen := map[string]bool{}
		ops := make([]clientv3.Op, len(idx))
		for j, i := range idx {
			for _, c := range cmp(i) {
				pc := c.GetCompare()
				id := fmt.Sprintf("%s\x00%v\x00%v\x00%v", pc.Key, pc.Target, pc.Result, pc.TargetUnion)
				if !seen[id] {
					seen[id] = true
					cmps = append(cmps, c)
				}
			}
			ops[j] = op(i)
		}
		resp, err := kv.Txn(ctx).If(cmps...).Then(ops...).Commit()
		if err != nil {
			return false, err
		}
		return resp.Succeeded, nil
	}
	for start := 0; start < n; start += pacing.BatchSize {
		end := min(start+pacing.BatchSize, n)
		batch := make([]int, 0, end-start)
		for i := start; i < end; i++ {
			batch = append(batch, i)
		}
		ok, err := run(batch)
		if err != nil {
			return fmt.Errorf("transaction for keys %d-%d: %w", start+1, end, err)
		}
		if ok {
			for _, i := range batch {
				done(i, true)
			}
			continue
		}
		for _, i := range batch {
			ok, err := run([]int{i})
			if err != nil {
				return fmt.Errorf("transaction for key %d: %w", i+1, err)
			}
			done(i, ok)
		}
	}
	return nil
}
