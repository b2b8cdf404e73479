package reclaim

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/pkg/etcdconn"
	"github.com/regghost/regghost/pkg/etcdmembers"
)

// probe reads m's Status again (etcdmembers.ReadOne: at its endpoint, else
// at its other client URLs, as the member it is) and checks its health
// (check).
func probe(ctx context.Context, o Options, m *Member) {
	ctx, cancel := context.WithTimeout(ctx, o.checkTimeout())
	defer cancel()
	em := etcdmembers.Member{Name: m.Name, ID: m.ID, Endpoint: m.Endpoint, ClientURLs: m.urls, Learner: m.Learner}
	if m.Endpoint == "" && len(m.urls) == 0 {
		check(ctx, o, m, em, nil)
		return
	}
	check(ctx, o, m, em, etcdmembers.ReadOne(ctx, o.Client, &em, o.checkTimeout()))
}

// check takes m's Status as etcdmembers read it into em (err, or
// em.Unreachable, says why it was not) and checks m's health: it answers
// without errors, as the member the list names, and knows a leader; a
// voting member also serves a linearizable read through its own endpoint
// (a read: NOSPACE refuses puts, and a read that passes shows the member
// caught up with the leader's commit). A learner serves no linearizable
// read; its Status is all that is asked.
func check(ctx context.Context, o Options, m *Member, em etcdmembers.Member, err error) {
	m.Healthy, m.Problem, m.answered = false, "", false
	switch {
	case len(m.urls) == 0 && em.Endpoint == "":
		m.Problem = "it advertises no client URL (it has not started)"
		return
	case err != nil:
		m.Problem = "it does not answer Status: " + oneLine(err)
		return
	case !em.Answers():
		m.Problem = "it does not answer Status: " + em.Unreachable
		return
	}
	m.answered = true
	m.Endpoint = em.Endpoint
	m.DBSize, m.DBSizeInUse, m.leaderID = em.DBSize, em.DBSizeInUse, em.LeaderID()
	m.Leader, m.Learner, m.Revision = em.Leader, m.Learner || em.Learner, em.Revision
	switch {
	case len(statusErrors(em.Errors)) > 0:
		m.Problem = "it reports errors: " + strings.Join(statusErrors(em.Errors), "; ")
		return
	case !em.LeaderKnown:
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

// listAlarms reads the cluster's alarms (etcdmembers.Alarms), naming each
// member of members ("" for one that is not among them).
func listAlarms(ctx context.Context, o Options, members []Member) ([]Alarm, error) {
	named := make([]etcdmembers.Member, 0, len(members))
	for _, m := range members {
		named = append(named, etcdmembers.Member{Name: m.Name, ID: m.ID})
	}
	alarms, err := etcdmembers.Alarms(ctx, o.Client, named, o.checkTimeout())
	if err != nil {
		// Every caller says what could not be read.
		return []Alarm{}, err
	}
	out := []Alarm{}
	for _, a := range alarms {
		id, err := strconv.ParseUint(a.ID, 16, 64)
		if err != nil {
			return []Alarm{}, fmt.Errorf("an alarm's member ID %q: %w", a.ID, err)
		}
		al := Alarm{MemberID: a.ID, Type: a.Alarm, id: id, typ: pb.AlarmType(pb.AlarmType_value[a.Alarm])}
		for _, m := range members {
			if m.id == id {
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
