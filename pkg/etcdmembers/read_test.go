package etcdmembers

import (
	"context"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/regghost/regghost/internal/etcdtest"
)

// deadURL is a client URL nobody listens on.
const deadURL = "http://127.0.0.1:1"

// TestReadStatuses: every command reaches the members the same way. The
// endpoints given may name one member alone: each other member is read at
// the first of its client URLs that answers as it; one that answers as
// another member, or not at all, is not taken for it, and a member down is
// listed with why, the others read.
func TestReadStatuses(t *testing.T) {
	ec := etcdtest.StartCluster(t, 3, 1000)
	ctx := context.Background()
	// A client on m0 alone: kube-apiserver's --etcd-servers on a
	// control-plane node often names only its own member.
	cli := ec.Clients[0]
	listed, err := List(ctx, cli, 2*time.Second)
	if err != nil || len(listed) != 3 {
		t.Fatalf("List: %v, %+v", err, listed)
	}
	url := func(name string) string {
		t.Helper()
		m := ByName(listed, name)
		if m == nil || len(m.ClientURLs) != 1 {
			t.Fatalf("member %s: %+v", name, m)
		}
		return m.ClientURLs[0]
	}
	for _, tc := range []struct {
		what string
		// urls replaces m1's client URLs (nil: as listed).
		urls []string
		// want are the endpoints m0, m1, m2 are read at ("": none, with
		// why containing unreachable).
		want        []string
		unreachable string
	}{
		{"the given endpoint for its member, the advertised URL for the others", nil,
			[]string{ec.Endpoints[0], url("m1"), url("m2")}, ""},
		{"the first client URL that answers", []string{deadURL, url("m1")},
			[]string{ec.Endpoints[0], url("m1"), url("m2")}, ""},
		{"a URL that answers as another member is not taken", []string{url("m2")},
			[]string{ec.Endpoints[0], "", url("m2")}, "answers as member " + HexID(ec.IDs[2]) + ", not " + HexID(ec.IDs[1])},
		{"no client URL", []string{},
			[]string{ec.Endpoints[0], "", url("m2")}, "no client URL"},
	} {
		t.Run(tc.what, func(t *testing.T) {
			ms := append([]Member{}, listed...)
			if tc.urls != nil {
				ByName(ms, "m1").ClientURLs = tc.urls
			}
			ReadStatuses(ctx, cli, ms, 2*time.Second)
			for i, name := range []string{"m0", "m1", "m2"} {
				m := ByName(ms, name)
				if m.Endpoint != tc.want[i] || m.Answers() != (tc.want[i] != "") || m.ID != HexID(ec.IDs[i]) {
					t.Errorf("%s: endpoint %q (answers %v, id %s), want %q", name, m.Endpoint, m.Answers(), m.ID, tc.want[i])
				}
				if tc.want[i] == "" && !strings.Contains(m.Unreachable, tc.unreachable) {
					t.Errorf("%s: unreachable %q, want it to say %q", name, m.Unreachable, tc.unreachable)
				}
				if tc.want[i] != "" && (m.DBSize <= 0 || m.DBSizeInUse <= 0 || m.Revision <= 0 || !m.LeaderKnown) {
					t.Errorf("%s: status not read: %+v", name, m)
				}
			}
		})
	}

	t.Run("ReadOne falls back to a client URL, as the member it is", func(t *testing.T) {
		m := *ByName(listed, "m1")
		m.Endpoint = deadURL
		if err := ReadOne(ctx, cli, &m, 2*time.Second); err != nil || m.Endpoint != url("m1") || !m.Answers() {
			t.Fatalf("ReadOne: %v, %+v", err, m)
		}
		m.Endpoint, m.ClientURLs = url("m2"), nil
		if err := ReadOne(ctx, cli, &m, 2*time.Second); err == nil || !strings.Contains(err.Error(), "answers as member") || m.Unreachable == "" {
			t.Fatalf("ReadOne at another member's URL: %v, %+v", err, m)
		}
	})

	// One member down is the commonest case: it is listed with why, the
	// others are read, and the alarms are named from the list.
	t.Run("a member down", func(t *testing.T) {
		down := 2
		if ec.Leader(t) == down {
			down = 1
		}
		ec.Stop(down)
		ms, alarms, notes := Read(ctx, cli, 2*time.Second)
		if len(ms) != 3 || len(notes) > 0 || len(alarms) > 0 {
			t.Fatalf("Read: %+v, alarms %+v, notes %q", ms, alarms, notes)
		}
		for i, m := range ms {
			if (i == down) == m.Answers() {
				t.Errorf("%s: answers %v, endpoint %q, unreachable %q", m.Name, m.Answers(), m.Endpoint, m.Unreachable)
			}
			if i == down && (!strings.HasPrefix(m.Unreachable, url(m.Name)+": ") || m.Endpoint != "") {
				t.Errorf("%s down: unreachable %q, want why at %s", m.Name, m.Unreachable, url(m.Name))
			}
		}
	})
}

// TestListPassesOverAStalledMember: the member list is read through a
// client on every member; one member answers nothing in time (its client
// URL behind a proxy that stalls): each read passes over it for the next
// member, and the list is read every time.
func TestListPassesOverAStalledMember(t *testing.T) {
	_, p, cli, _ := proxiedCluster(t)
	ctx := context.Background()
	// The stalled member's endpoint takes reads before the stall: reads
	// until one went there (the client picks its endpoints in turn once
	// each is connected).
	for i := 0; ; i++ {
		before := p.Sent()
		if _, err := List(ctx, cli, 5*time.Second); err != nil {
			t.Fatal(err)
		}
		if p.Sent() > before && i >= 3 {
			break
		}
		if i > 100 {
			t.Fatal("no read goes to the member behind the proxy")
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.Stall()
	for i := range 6 {
		if listed, err := List(ctx, cli, 500*time.Millisecond); err != nil || len(listed) != 3 {
			t.Fatalf("read %d: %v, %+v", i, err, listed)
		}
	}
	if p.Held() == 0 {
		t.Fatal("no read went to the stalled member: the test shows nothing")
	}
}

// TestReadStatusesAsksAStalledEndpointOnce: a member whose endpoint given
// does not answer in the timeout is not asked again at the same URL, its
// client URL in the member list (each ask costs another timeout).
func TestReadStatusesAsksAStalledEndpointOnce(t *testing.T) {
	ec, p, cli, _ := proxiedCluster(t)
	ctx := context.Background()
	ms, err := List(ctx, ec.Client, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ByName(ms, "m0").ClientURLs = []string{p.Addr}
	p.Stall()
	before := p.Conns()
	ReadStatuses(ctx, cli, ms, 500*time.Millisecond)
	m0 := ByName(ms, "m0")
	if m0.Answers() || !strings.HasPrefix(m0.Unreachable, p.Addr+": ") {
		t.Errorf("m0 stalled: answers %v, unreachable %q", m0.Answers(), m0.Unreachable)
	}
	if n := p.Conns() - before; n != 1 {
		t.Errorf("m0's endpoint was asked on %d connections, want 1", n)
	}
	for _, name := range []string{"m1", "m2"} {
		if !ByName(ms, name).Answers() {
			t.Errorf("%s does not answer: %q", name, ByName(ms, name).Unreachable)
		}
	}
}

// TestReachAsksTheQuickestVoter: the member list is asked of the voter
// that answered its Status first, never of a slow member given first (a
// member starved of CPU costs the timeout before the next is asked).
func TestReachAsksTheQuickestVoter(t *testing.T) {
	ec, p, cli, cfg := proxiedCluster(t)
	p.Slow(100 * time.Millisecond)
	before := p.Conns()
	cl, err := Reach(context.Background(), cli, cfg, 10*time.Second)
	if err != nil || len(cl.Members) != 3 {
		t.Fatalf("Reach: %v, %+v", err, cl)
	}
	if cl.Given[HexID(ec.IDs[0])] != p.Addr {
		t.Errorf("the slow member was not read as itself: given %v", cl.Given)
	}
	// One connection for its Status; a client of its own for the member
	// list would be another.
	if n := p.Conns() - before; n != 1 {
		t.Errorf("the slow member was asked on %d connections, want 1 (its Status)", n)
	}
}

// proxiedCluster runs three members and a client on all three, m0's
// endpoint behind a proxy that stalls or slows it.
func proxiedCluster(t *testing.T) (*etcdtest.Cluster, *etcdtest.StallProxy, *clientv3.Client, clientv3.Config) {
	t.Helper()
	ec := etcdtest.StartCluster(t, 3, 1000)
	p := etcdtest.NewStallProxy(t, ec.Endpoints[0])
	cfg := clientv3.Config{Endpoints: []string{p.Addr, ec.Endpoints[1], ec.Endpoints[2]}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()}
	cli, err := clientv3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return ec, p, cli, cfg
}
