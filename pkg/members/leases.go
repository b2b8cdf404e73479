package members

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// compareLeases reads the leases each member holds (LeaseLeases is
// answered from the member's own lessor). A member that applies its log
// later than another holds other leases for a while (one granted since,
// one revoked): when they differ, the leases are read again once every
// member has applied what the furthest had at the first read, and only a
// lease held by the same members in both reads is a difference. When a
// member does not catch up meanwhile, the leases are not judged.
func (r *run) compareLeases(ctx context.Context) (LeaseComparison, [][]string) {
	first, err := r.leases(ctx)
	if err != nil {
		return LeaseComparison{Error: err.Error()}, nil
	}
	mark := r.appliedMark(ctx)
	lc := LeaseComparison{Compared: true}
	names := r.names()
	odd := unevenLeases(first)
	if len(odd) > 0 {
		if why := r.catchUp(ctx, mark); why != "" {
			return LeaseComparison{Error: "the leases differed, and were not read again: " + why}, nil
		}
		second, err := r.leases(ctx)
		if err != nil {
			return LeaseComparison{Error: err.Error()}, nil
		}
		again := unevenLeases(second)
		var stable []int64
		for _, id := range odd {
			if slices.Contains(again, id) && slices.Equal(holders(first, id), holders(second, id)) {
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
		for _, i := range holders(first, id) {
			d.Holders = append(d.Holders, names[i])
		}
		lc.Differ = append(lc.Differ, d)
	}
	return lc, partition(names, labels)
}

// holders are the members (by place) holding lease id.
func holders(held []map[int64]bool, id int64) []int {
	var out []int
	for i, h := range held {
		if h[id] {
			out = append(out, i)
		}
	}
	return out
}

// appliedMark is the highest raft index the compared members applied, as
// their Status says now (0: none says).
func (r *run) appliedMark(ctx context.Context) uint64 {
	var mark uint64
	for _, s := range r.statuses(ctx) {
		if s.Error == "" {
			mark = max(mark, s.AppliedIndex)
		}
	}
	return mark
}

// catchUp waits the interval, then until every compared member has
// applied mark (for up to another interval); it says why not ("": they
// did).
func (r *run) catchUp(ctx context.Context, mark uint64) string {
	if err := sleep(ctx, r.opts.interval()); err != nil {
		return err.Error()
	}
	deadline := time.Now().Add(r.opts.interval())
	for {
		var late []string
		for _, s := range r.statuses(ctx) {
			if s.Error != "" || s.AppliedIndex < mark {
				late = append(late, s.Member)
			}
		}
		if len(late) == 0 {
			return ""
		}
		if time.Now().After(deadline) {
			return fmt.Sprintf("%s did not apply raft index %d, which another member had applied at the first read, within %s: it fell behind",
				names(late), mark, 2*r.opts.interval())
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return err.Error()
		}
	}
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
