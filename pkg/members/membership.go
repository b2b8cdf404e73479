package members

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// compareMembership reads each member's own member list (serializable:
// the member answers from its own store) and groups the members by it.
// When they differ it reads them again, once every member has applied
// what the furthest had at the first read: only lists that split the
// members the same way in both reads are a difference (a member added or
// removed, not applied yet by a member behind, is not).
func (r *run) compareMembership(ctx context.Context) (MembershipComparison, [][]string) {
	first, groups := r.memberLists(ctx)
	if len(groups) <= 1 {
		return first, groups
	}
	if why := r.catchUp(ctx, r.appliedMark(ctx)); why != "" {
		return MembershipComparison{Error: "the member lists differed, and were not read again: " + why}, nil
	}
	second, again := r.memberLists(ctx)
	if !second.Compared || !samePartition(groups, again) {
		return MembershipComparison{Compared: true, Views: second.Views, Moved: true}, nil
	}
	return second, again
}

// memberLists reads each member's member list once.
func (r *run) memberLists(ctx context.Context) (MembershipComparison, [][]string) {
	names := r.names()
	lists := make([][]string, len(r.conns))
	errs := make([]error, len(r.conns))
	var wg sync.WaitGroup
	for i, c := range r.conns {
		wg.Go(func() {
			mctx, cancel := context.WithTimeout(ctx, r.opts.timeout())
			defer cancel()
			resp, err := c.cli.MemberList(mctx, clientv3.WithSerializable())
			if err != nil {
				errs[i] = fmt.Errorf("read %s's member list: %s", names[i], firstLine(err))
				return
			}
			for _, m := range resp.Members {
				line := fmt.Sprintf("%s %x %s", orUnstarted(m.Name), m.ID, strings.Join(m.PeerURLs, ","))
				if m.IsLearner {
					line += " learner"
				}
				lists[i] = append(lists[i], line)
			}
			slices.Sort(lists[i])
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return MembershipComparison{Error: err.Error()}, nil
		}
	}
	labels := map[string]string{}
	byLabel := map[string][]string{}
	for i, l := range lists {
		labels[names[i]] = strings.Join(l, "\n")
		byLabel[labels[names[i]]] = l
	}
	groups := partition(names, labels)
	mc := MembershipComparison{Compared: true}
	for _, g := range groups {
		mc.Views = append(mc.Views, MembershipView{HeldBy: g, List: byLabel[labels[g[0]]]})
	}
	return mc, groups
}

func orUnstarted(name string) string {
	if name == "" {
		return "(unstarted)"
	}
	return name
}
