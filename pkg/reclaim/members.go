package reclaim

import (
	"context"
	"fmt"
	"slices"
	"sort"
)

// listMembers reads the member list and picks each member's endpoint: the
// endpoint the user gave that answers as that member, else the first
// client URL the member advertises. Each member is reached on its own:
// the endpoints given may name only one member (kube-apiserver's
// --etcd-servers often names the local one alone).
func listMembers(ctx context.Context, o Options) ([]Member, error) {
	lctx, cancel := context.WithTimeout(ctx, o.checkTimeout())
	defer cancel()
	resp, err := o.Client.MemberList(lctx)
	if err != nil {
		return nil, fmt.Errorf("read etcd's member list: %w", err)
	}
	given := map[uint64]string{}
	for _, ep := range o.Client.Endpoints() {
		sctx, cancel := context.WithTimeout(ctx, o.checkTimeout())
		st, err := o.Client.Status(sctx, ep)
		cancel()
		if err == nil && st.Header != nil {
			if _, ok := given[st.Header.MemberId]; !ok {
				given[st.Header.MemberId] = ep
			}
		}
	}
	out := make([]Member, 0, len(resp.Members))
	for _, pm := range resp.Members {
		m := Member{Name: pm.Name, ID: fmt.Sprintf("%x", pm.ID), id: pm.ID, Learner: pm.IsLearner, urls: pm.ClientURLs}
		if ep, ok := given[pm.ID]; ok {
			m.Endpoint = ep
		} else if len(pm.ClientURLs) > 0 {
			m.Endpoint = pm.ClientURLs[0]
			m.advertised = !slices.Contains(o.Config.Endpoints, m.Endpoint)
		}
		if m.Name == "" {
			m.Name = m.ID
		}
		out = append(out, m)
	}
	return out, nil
}

// inOrder is the order of defragmentation: followers by name, then the
// leader, then learners (skipped: etcd serves them no Defragment).
func inOrder(members []Member) []Member {
	out := append([]Member{}, members...)
	rank := func(m *Member) int {
		switch {
		case m.Learner:
			return 2
		case m.Leader:
			return 1
		}
		return 0
	}
	sort.SliceStable(out, func(i, j int) bool {
		if ri, rj := rank(&out[i]), rank(&out[j]); ri != rj {
			return ri < rj
		}
		return out[i].Name < out[j].Name
	})
	return out
}
