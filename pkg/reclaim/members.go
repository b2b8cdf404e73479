package reclaim

import (
	"context"
	"slices"
	"sort"
	"sync"

	"github.com/regghost/regghost/pkg/etcdmembers"
)

// listMembers reads the members as every command does (pkg/etcdmembers):
// the member list, and each member's Status at the endpoint given that
// answers as it, else at the first of its client URLs that answers as it,
// every member at once. Each member is reached on its own: the endpoints
// given may name only one member (kube-apiserver's --etcd-servers often
// names the local one alone). Each is then checked as check says.
func listMembers(ctx context.Context, o Options) ([]Member, error) {
	listed, err := etcdmembers.List(ctx, o.Client, o.checkTimeout())
	if err != nil {
		return nil, err
	}
	etcdmembers.ReadStatuses(ctx, o.Client, listed, o.checkTimeout())
	out := make([]Member, len(listed))
	var wg sync.WaitGroup
	for i, em := range listed {
		m := Member{Name: em.Name, ID: em.ID, id: em.RawID(), Learner: em.Learner, urls: em.ClientURLs, Endpoint: em.Endpoint}
		if m.Endpoint == "" && len(em.ClientURLs) > 0 {
			// It answers at none: the plan names the URL it advertises.
			m.Endpoint = em.ClientURLs[0]
		}
		m.advertised = !slices.Contains(o.Config.Endpoints, m.Endpoint)
		if m.Name == "" {
			m.Name = m.ID
		}
		out[i] = m
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, o.checkTimeout())
			defer cancel()
			check(ctx, o, &out[i], em, nil)
		})
	}
	wg.Wait()
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
