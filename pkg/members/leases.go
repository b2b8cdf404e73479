package members

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// compareLeases reads the leases each member holds (LeaseLeases is
// answered from the member's own lessor). When they differ it reads them
// again after a pause: a lease granted or revoked between the reads of two
// members is not a difference. The groups are the members by the leases
// that differ in both reads.
func (r *run) compareLeases(ctx context.Context) (LeaseComparison, [][]string) {
	first, err := r.leases(ctx)
	if err != nil {
		return LeaseComparison{Error: err.Error()}, nil
	}
	lc := LeaseComparison{Compared: true}
	names := r.names()
	odd := unevenLeases(first)
	if len(odd) > 0 {
		if err := sleep(ctx, r.opts.interval()); err != nil {
			return LeaseComparison{Error: err.Error()}, nil
		}
		second, err := r.leases(ctx)
		if err != nil {
			return LeaseComparison{Error: err.Error()}, nil
		}
		again := unevenLeases(second)
		var stable []int64
		for _, id := range odd {
			if slices.Contains(again, id) {
				stable = append(stable, id)
			}
		}
		odd, first = stable, second
	}
	labels := map[string]string{}
	for i, held := range first {
		lc.Counts = append(lc.Counts, MemberCount{Member: names[i], Count: len(held)})
		var mine []string
		for _, id := range odd {
			if held[id] {
				mine = append(mine, fmt.Sprintf("%x", id))
			}
		}
		labels[names[i]] = strings.Join(mine, ",")
	}
	for _, id := range odd {
		d := LeaseDiff{ID: fmt.Sprintf("%x", id), Holders: []string{}}
		for i, held := range first {
			if held[id] {
				d.Holders = append(d.Holders, names[i])
			}
		}
		lc.Differ = append(lc.Differ, d)
	}
	return lc, partition(names, labels)
}

// leases reads each member's lease IDs.
func (r *run) leases(ctx context.Context) ([]map[int64]bool, error) {
	out := make([]map[int64]bool, len(r.conns))
	errs := make([]error, len(r.conns))
	var wg sync.WaitGroup
	for i, c := range r.conns {
		wg.Go(func() {
			lctx, cancel := context.WithTimeout(ctx, r.opts.timeout())
			defer cancel()
			resp, err := c.cli.Leases(lctx)
			if err != nil {
				errs[i] = fmt.Errorf("read %s's leases: %s", r.rep.Members[c.m].Name, firstLine(err))
				return
			}
			out[i] = map[int64]bool{}
			for _, l := range resp.Leases {
				out[i][int64(l.ID)] = true
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// unevenLeases are the lease IDs some members hold and others do not, in
// order.
func unevenLeases(held []map[int64]bool) []int64 {
	seen := map[int64]int{}
	for _, h := range held {
		for id := range h {
			seen[id]++
		}
	}
	var out []int64
	for id, n := range seen {
		if n < len(held) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}
