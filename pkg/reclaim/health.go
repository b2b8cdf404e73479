package reclaim

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/pkg/etcdconn"
)

// probe reads m's Status and checks its health: it answers without errors,
// as the member the list names, and knows a leader; a voting member also
// serves a linearizable read through its own endpoint (a read: NOSPACE
// refuses puts, and a read that passes shows the member caught up with
// the leader's commit). A learner serves no linearizable read; its Status
// is all that is asked.
func probe(ctx context.Context, o Options, m *Member) {
	m.Healthy, m.Problem, m.answered = false, "", false
	if m.Endpoint == "" {
		m.Problem = "it advertises no client URL (it has not started)"
		return
	}
	ctx, cancel := context.WithTimeout(ctx, o.checkTimeout())
	defer cancel()
	st, err := o.Client.Status(ctx, m.Endpoint)
	if err != nil {
		m.Problem = "it does not answer Status: " + oneLine(err)
		return
	}
	m.answered = true
	m.DBSize, m.DBSizeInUse, m.leaderID = st.DbSize, st.DbSizeInUse, st.Leader
	m.Leader = st.Header != nil && st.Leader != 0 && st.Leader == st.Header.MemberId
	m.Learner = m.Learner || st.IsLearner
	if st.Header != nil {
		m.Revision = st.Header.Revision
	}
	switch {
	case st.Header == nil || st.Header.MemberId != m.id:
		m.Problem = fmt.Sprintf("%s answers as another member than %s", m.Endpoint, m.ID)
		return
	case len(statusErrors(st.Errors)) > 0:
		m.Problem = "it reports errors: " + strings.Join(statusErrors(st.Errors), "; ")
		return
	case st.Leader == 0:
		m.Problem = "it knows no leader"
		return
	}
	if !m.Learner {
		if err := readThrough(ctx, o, m.Endpoint); err != nil {
			m.Problem = "it serves no linearizable read: " + oneLine(err)
			return
		}
	}
	m.Healthy = true
}

// statusErrors are the errors a Status reports but the NOSPACE alarm,
// which etcd lists among them ("memberID:… alarm:NOSPACE") and which is
// what reclaim is for.
func statusErrors(errs []string) []string {
	var out []string
	for _, e := range errs {
		if !strings.Contains(strings.Join(strings.Fields(e), ""), "alarm:NOSPACE") {
			out = append(out, e)
		}
	}
	return out
}

// readThrough reads one key through endpoint alone, linearizably, as
// `etcdctl endpoint health` does. A permission error is an answer: the
// member served the request.
func readThrough(ctx context.Context, o Options, endpoint string) error {
	cfg := o.Config
	cfg.Endpoints = []string{endpoint}
	cfg.Context = ctx
	cli, err := etcdconn.NewClient(cfg)
	if err != nil {
		return err
	}
	defer cli.Close()
	_, err = cli.Get(ctx, "health", clientv3.WithCountOnly())
	if errors.Is(err, rpctypes.ErrPermissionDenied) {
		return nil
	}
	return err
}

// probeAll probes every member at once: a member that is down costs one
// timeout, not one each.
func probeAll(ctx context.Context, o Options, members []Member) {
	var wg sync.WaitGroup
	for i := range members {
		wg.Go(func() { probe(ctx, o, &members[i]) })
	}
	wg.Wait()
}

// listAlarms reads the cluster's alarms, naming each member.
func listAlarms(ctx context.Context, o Options, members []Member) ([]Alarm, error) {
	ctx, cancel := context.WithTimeout(ctx, o.checkTimeout())
	defer cancel()
	resp, err := o.Client.AlarmList(ctx)
	if err != nil {
		return []Alarm{}, err
	}
	out := []Alarm{}
	for _, a := range resp.Alarms {
		al := Alarm{MemberID: fmt.Sprintf("%x", a.MemberID), Type: a.Alarm.String(), id: a.MemberID, typ: a.Alarm}
		for _, m := range members {
			if m.id == a.MemberID {
				al.Member = m.Name
			}
		}
		out = append(out, al)
	}
	return out, nil
}

// otherAlarms are the alarms other than NOSPACE, in words; empty when none.
func otherAlarms(alarms []Alarm) string {
	var out []string
	for _, a := range alarms {
		if a.typ != pb.AlarmType_NOSPACE {
			out = append(out, a.Type+" on "+orID(a.Member, a.MemberID))
		}
	}
	return strings.Join(out, ", ")
}

func oneLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}
