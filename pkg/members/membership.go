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
func (r *run) compareMembership(ctx context.Context) (MembershipComparison, [][]string) {
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
