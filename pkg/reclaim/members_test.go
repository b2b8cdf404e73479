package reclaim

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/regghost/regghost/pkg/etcdmembers"
)

// deadURL is a client URL nobody listens on.
const deadURL = "http://127.0.0.1:1"

// TestCheck: a member's health is judged from its Status as pkg/etcdmembers
// reads it for every command (learners, a size in use etcd does not say,
// a member that answers at none of its URLs), before any read through it.
func TestCheck(t *testing.T) {
	const id = 0x10
	status := func(edit func(*pb.StatusResponse)) etcdmembers.Member {
		st := &pb.StatusResponse{Header: &pb.ResponseHeader{MemberId: id, Revision: 7}, Leader: id + 1, DbSize: 100, DbSizeInUse: 60}
		edit(st)
		em := etcdmembers.Member{ID: etcdmembers.HexID(id), Endpoint: "https://10.0.0.1:2379", ClientURLs: []string{"https://10.0.0.1:2379"}}
		em.FromStatus(st)
		return em
	}
	for _, tc := range []struct {
		what string
		em   etcdmembers.Member
		urls []string
		err  error
		// want is the problem ("": healthy, no read asked).
		want       string
		fragmented int64
	}{
		{"a learner: its Status is all that is asked", status(func(st *pb.StatusResponse) { st.IsLearner = true }), []string{"https://10.0.0.1:2379"}, nil, "", 40},
		{"NOSPACE is what reclaim is for", status(func(st *pb.StatusResponse) {
			st.IsLearner, st.Errors = true, []string{"memberID:16 alarm:NOSPACE "}
		}), []string{"https://10.0.0.1:2379"}, nil, "", 40},
		{"etcd before 3.4 says no size in use: nothing is counted fragmented", status(func(st *pb.StatusResponse) { st.IsLearner, st.DbSizeInUse = true, 0 }),
			[]string{"https://10.0.0.1:2379"}, nil, "", 0},
		{"other errors", status(func(st *pb.StatusResponse) { st.Errors = []string{"memberID:16 alarm:CORRUPT"} }), []string{"https://10.0.0.1:2379"}, nil,
			"it reports errors: memberID:16 alarm:CORRUPT", 40},
		{"no leader known", status(func(st *pb.StatusResponse) { st.Leader = 0 }), []string{"https://10.0.0.1:2379"}, nil, "it knows no leader", 40},
		{"it answers at none of its URLs", etcdmembers.Member{ID: "10", Unreachable: "https://10.0.0.1:2379: context deadline exceeded"}, []string{"https://10.0.0.1:2379"}, nil,
			"it does not answer Status: https://10.0.0.1:2379: context deadline exceeded", 0},
		{"it answers as another member", etcdmembers.Member{ID: "10", Endpoint: "https://10.0.0.1:2379"}, []string{"https://10.0.0.1:2379"},
			fmt.Errorf("https://10.0.0.1:2379 answers as member 11, not 10"), "it does not answer Status: https://10.0.0.1:2379 answers as member 11, not 10", 0},
		{"not started", etcdmembers.Member{ID: "10", Unreachable: "no client URL (a member not started yet)"}, nil, nil, "it advertises no client URL (it has not started)", 0},
	} {
		t.Run(tc.what, func(t *testing.T) {
			m := Member{Name: "m0", ID: "10", id: id, urls: tc.urls, Endpoint: "https://10.0.0.1:2379"}
			check(context.Background(), Options{}, &m, tc.em, tc.err)
			if m.Problem != tc.want || m.Healthy != (tc.want == "") || m.answered != (tc.em.Answers() && tc.err == nil) || m.Fragmented() != tc.fragmented {
				t.Errorf("healthy %v, answered %v, problem %q, fragmented %d; want problem %q, fragmented %d", m.Healthy, m.answered, m.Problem, m.Fragmented(), tc.want, tc.fragmented)
			}
			if m.answered && (m.Revision != 7 || m.DBSize != 100 || !m.Learner && tc.want == "") {
				t.Errorf("status not taken: %+v", m)
			}
		})
	}
}

// freeURL is a loopback URL on a port free now.
func freeURL(t *testing.T) url.URL {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	u, _ := url.Parse("http://" + l.Addr().String())
	return *u
}

// startAdvertising runs two embedded etcd members, m0 and m1, until the
// test ends. m1 advertises first a client URL nobody listens on (deadURL),
// then its own. It returns the options of a client on m0 alone, as on a
// control-plane node whose kube-apiserver names its own member only, and
// m1's own client URL.
func startAdvertising(t *testing.T) (Options, string) {
	t.Helper()
	peers, clients := []url.URL{freeURL(t), freeURL(t)}, []url.URL{freeURL(t), freeURL(t)}
	initial := "m0=" + peers[0].String() + ",m1=" + peers[1].String()
	token := fmt.Sprintf("advertising-%d", time.Now().UnixNano())
	dead, _ := url.Parse(deadURL)
	var servers []*embed.Etcd
	for i := range 2 {
		cfg := embed.NewConfig()
		cfg.Name, cfg.Dir = fmt.Sprintf("m%d", i), t.TempDir()
		cfg.Logger, cfg.LogLevel = "zap", "error"
		cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
		cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{clients[i]}, []url.URL{clients[i]}
		if i == 1 {
			cfg.AdvertiseClientUrls = []url.URL{*dead, clients[i]}
		}
		cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peers[i]}, []url.URL{peers[i]}
		cfg.InitialCluster, cfg.InitialClusterToken = initial, token
		e, err := embed.StartEtcd(cfg)
		if err != nil {
			t.Fatalf("start member m%d: %v", i, err)
		}
		t.Cleanup(e.Close)
		servers = append(servers, e)
	}
	for i, e := range servers {
		select {
		case <-e.Server.ReadyNotify():
		case <-time.After(60 * time.Second):
			t.Fatalf("member m%d did not become ready", i)
		}
	}
	cfg := clientv3.Config{Endpoints: []string{clients[0].Host}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()}
	cli, err := clientv3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return Options{Client: cli, Config: cfg, CheckTimeout: 2 * time.Second}, clients[1].String()
}

// TestSurveyReachesMembersAsEveryCommand: space reclaim reaches each member
// as every command does (pkg/etcdmembers): a member the endpoints given do
// not name is read at the first of its advertised client URLs that answers
// as it, not at the first it advertises.
func TestSurveyReachesMembersAsEveryCommand(t *testing.T) {
	o, m1URL := startAdvertising(t)
	o.BackupRoot = t.TempDir()
	p, err := Survey(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Members) != 2 {
		t.Fatalf("members: %+v", p.Members)
	}
	for _, m := range p.Members {
		if m.Name == "m1" && (len(m.urls) != 2 || m.urls[0] != deadURL) {
			t.Fatalf("etcd lists m1's client URLs as %v: the test needs %s first", m.urls, deadURL)
		}
		want := o.Config.Endpoints[0]
		if m.Name == "m1" {
			want = m1URL
		}
		if !m.Healthy || m.Endpoint != want || m.DBSize <= 0 {
			t.Errorf("%s: healthy %v (%s), endpoint %q, want %q", m.Name, m.Healthy, m.Problem, m.Endpoint, want)
		}
	}
	if len(p.Refusals) > 0 || p.Leader() == nil {
		t.Errorf("refusals %q, leader %v", p.Refusals, p.Leader())
	}
}

// TestSurveyOneMemberDown: one member down (the commonest case) is in the
// plan with why, at each client URL it was tried, the others read, and the
// run refused; the alarms are read and named from the member list.
func TestSurveyOneMemberDown(t *testing.T) {
	c := startCluster(t)
	down := 2
	if c.leader(t) == down {
		down = 1
	}
	if _, err := c.cli.AlarmList(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.ec.Stop(down)
	o := c.options(t)
	o.CheckTimeout = 2 * time.Second
	p, err := Survey(context.Background(), o)
	if err != nil {
		t.Fatalf("Survey with a member down: %v", err)
	}
	if len(p.Members) != 3 || len(p.Alarms) != 0 {
		t.Fatalf("members %+v, alarms %+v", p.Members, p.Alarms)
	}
	for _, m := range p.Members {
		if m.Name != c.names[down] {
			if !m.Healthy {
				t.Errorf("%s: not healthy: %s", m.Name, m.Problem)
			}
			continue
		}
		if m.Healthy || !strings.HasPrefix(m.Problem, "it does not answer Status: "+m.urls[0]+": ") || m.Endpoint != m.urls[0] {
			t.Errorf("%s down: healthy %v, endpoint %q, problem %q", m.Name, m.Healthy, m.Endpoint, m.Problem)
		}
	}
	if got := strings.Join(p.Refusals, "; "); !strings.Contains(got, "member "+c.names[down]+" (") {
		t.Errorf("refusals %q, want the member down named", got)
	}
}
