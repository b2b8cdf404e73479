package etcdmembers

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Read reads the member list through cli, each member's Status and the
// alarms raised. Each member is read at an endpoint of cli that answers
// as it, else at its client URLs in the member list (an advertised URL may
// not be reachable from here). A member that does not answer is listed
// with why; notes say what could not be read at all (kine has no member
// list or alarms: the endpoints given are read instead). The members are
// sorted by name.
func Read(ctx context.Context, cli *clientv3.Client, timeout time.Duration) (members []Member, alarms []Alarm, notes []string) {
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	list, err := List(ctx, cli, timeout)
	if err != nil {
		notes = append(notes, fmt.Sprintf("the member list could not be read (%s): the endpoints given are read instead", firstLine(err)))
		list = nil
		for _, ep := range cli.Endpoints() {
			list = append(list, Member{Name: ep, ClientURLs: []string{ep}})
		}
	}
	ReadStatuses(ctx, cli, list, timeout)
	alarms, err = Alarms(ctx, cli, list, timeout)
	if err != nil {
		notes = append(notes, fmt.Sprintf("the alarms could not be read: %s", firstLine(err)))
	}
	return list, alarms, notes
}

// ReadStatuses reads each member's Status into it, every member at once:
// at an endpoint of cli that answers as it, else at the first of its client
// URLs in the member list that answers as it (an advertised URL may not be
// reachable from here, and the endpoints given may name one member alone:
// kube-apiserver's --etcd-servers often names the local one). A member that
// answers at none is left with why (Unreachable) and no Endpoint.
func ReadStatuses(ctx context.Context, cli *clientv3.Client, members []Member, timeout time.Duration) {
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	given := statuses(ctx, cli, cli.Endpoints(), timeout)
	var wg sync.WaitGroup
	for i := range members {
		wg.Go(func() { readMember(ctx, cli, &members[i], given, timeout) })
	}
	wg.Wait()
}

// List reads the member list, sorted by name, without any member's status.
// etcd's client asks its endpoints in turn: one that does not answer in
// timeout (a member starved of CPU) is passed over for the next, up to as
// many asks as cli has endpoints (other calls on cli move the turn too,
// so a slow endpoint may be asked again).
func List(ctx context.Context, cli *clientv3.Client, timeout time.Duration) ([]Member, error) {
	var err error
	for range max(1, len(cli.Endpoints())) {
		var resp *clientv3.MemberListResponse
		if resp, err = memberList(ctx, cli, timeout); err == nil {
			return fromResponse(resp.Members), nil
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, err
}

func memberList(ctx context.Context, cli *clientv3.Client, timeout time.Duration) (*clientv3.MemberListResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := cli.MemberList(ctx)
	if err != nil {
		return nil, fmt.Errorf("read etcd's member list: %w", err)
	}
	return resp, nil
}

func fromResponse(pms []*pb.Member) []Member {
	out := make([]Member, 0, len(pms))
	for _, pm := range pms {
		out = append(out, fromList(pm))
	}
	slices.SortFunc(out, func(a, b Member) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// Alarms reads the alarms raised, naming each member from ms.
func Alarms(ctx context.Context, cli *clientv3.Client, ms []Member, timeout time.Duration) ([]Alarm, error) {
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := cli.AlarmList(actx)
	if err != nil {
		return nil, err
	}
	var alarms []Alarm
	for _, am := range resp.Alarms {
		id := HexID(am.MemberID)
		name := id
		for _, m := range ms {
			if m.ID == id {
				name = m.Name
			}
		}
		alarms = append(alarms, Alarm{Member: name, ID: id, Alarm: am.Alarm.String()})
	}
	slices.SortFunc(alarms, func(a, b Alarm) int { return cmp.Or(cmp.Compare(a.Alarm, b.Alarm), cmp.Compare(a.Member, b.Member)) })
	return alarms, nil
}

// answer is one endpoint's Status.
type answer struct {
	endpoint string
	status   *pb.StatusResponse
	err      error
	// took is how long it took to answer.
	took time.Duration
}

// statuses asks each endpoint for its Status, in parallel (a Status is
// cheap: it holds no lock a write waits on).
func statuses(ctx context.Context, cli *clientv3.Client, endpoints []string, timeout time.Duration) []answer {
	out := make([]answer, len(endpoints))
	var wg sync.WaitGroup
	for i, ep := range endpoints {
		wg.Go(func() {
			sctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			start := time.Now()
			st, err := cli.Status(sctx, ep)
			out[i] = answer{endpoint: ep, err: err, took: time.Since(start)}
			if err == nil {
				out[i].status = (*pb.StatusResponse)(st)
			}
		})
	}
	wg.Wait()
	return out
}

// readMember fills m from its Status: from an endpoint given that
// answered as m, else from m's first client URL that answers.
func readMember(ctx context.Context, cli *clientv3.Client, m *Member, given []answer, timeout time.Duration) {
	for _, a := range given {
		if a.status != nil && a.status.Header != nil && (HexID(a.status.Header.MemberId) == m.ID || (m.ID == "" && a.endpoint == m.Name)) {
			m.Endpoint = a.endpoint
			m.FromStatus(a.status)
			return
		}
	}
	if len(m.ClientURLs) == 0 {
		m.Unreachable = "no client URL (a member not started yet)"
		return
	}
	// A client URL that is an endpoint given was asked already: asking it
	// again costs another timeout when it did not answer.
	var why, urls []string
	for _, u := range m.ClientURLs {
		i := slices.IndexFunc(given, func(a answer) bool { return a.endpoint == u })
		if i >= 0 && given[i].err != nil {
			why = append(why, u+": "+firstLine(given[i].err))
			continue
		}
		urls = append(urls, u)
	}
	for _, a := range statuses(ctx, cli, urls, timeout) {
		if a.err != nil {
			why = append(why, a.endpoint+": "+firstLine(a.err))
			continue
		}
		if a.status.Header != nil && m.ID != "" && HexID(a.status.Header.MemberId) != m.ID {
			why = append(why, fmt.Sprintf("%s: answers as member %x, not %s", a.endpoint, a.status.Header.MemberId, m.ID))
			continue
		}
		m.Endpoint = a.endpoint
		m.FromStatus(a.status)
		return
	}
	m.Unreachable = strings.Join(why, "; ")
}

// ReadOne reads m's status again at its endpoint (or client URLs), for a
// check right before a step.
func ReadOne(ctx context.Context, cli *clientv3.Client, m *Member, timeout time.Duration) error {
	eps := m.ClientURLs
	if m.Endpoint != "" {
		eps = append([]string{m.Endpoint}, eps...)
	}
	var last error
	for _, ep := range eps {
		sctx, cancel := context.WithTimeout(ctx, timeout)
		st, err := cli.Status(sctx, ep)
		cancel()
		if err == nil && (st.Header == nil || m.ID == "" || HexID(st.Header.MemberId) == m.ID) {
			m.Endpoint = ep
			m.FromStatus((*pb.StatusResponse)(st))
			return nil
		}
		if err == nil {
			err = fmt.Errorf("%s answers as member %x, not %s", ep, st.Header.MemberId, m.ID)
		}
		last = err
	}
	if last == nil {
		last = fmt.Errorf("no client URL")
	}
	m.Unreachable = firstLine(last)
	return last
}
