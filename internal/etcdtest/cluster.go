package etcdtest

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Cluster is an embedded etcd cluster of several members on loopback, each
// stopped and started again from its own data directory.
type Cluster struct {
	// Names are the members' names (m0, m1, ...), Dirs their data
	// directories, IDs their member IDs and Endpoints their client
	// addresses.
	Names, Dirs []string
	IDs         []uint64
	Endpoints   []string
	// Clients reach one member each; Client reaches every member.
	Clients []*clientv3.Client
	Client  *clientv3.Client
	// Servers are the running members (nil while stopped).
	Servers []*embed.Etcd

	peers, urls    []url.URL
	initial, token string
	electionMs     uint
}

// freeURL is a loopback URL on a port free now.
func freeURL(t testing.TB) url.URL {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	u, _ := url.Parse("http://" + l.Addr().String())
	return *u
}

// StartCluster runs n members until the test ends, elections every
// electionMs (slow elections keep leadership where the test puts it on a
// busy machine).
func StartCluster(t testing.TB, n int, electionMs uint) *Cluster {
	t.Helper()
	c := &Cluster{token: fmt.Sprintf("etcdtest-%d-%d", os.Getpid(), time.Now().UnixNano()), electionMs: electionMs}
	var initial []string
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("m%d", i)
		c.Names = append(c.Names, name)
		c.Dirs = append(c.Dirs, filepath.Join(t.TempDir(), name))
		c.peers = append(c.peers, freeURL(t))
		c.urls = append(c.urls, freeURL(t))
		initial = append(initial, name+"="+c.peers[i].String())
	}
	c.initial = strings.Join(initial, ",")
	c.Servers = make([]*embed.Etcd, n)
	for i := range c.Names {
		c.Launch(t, i)
	}
	for i := range c.Names {
		c.Ready(t, i)
		c.IDs = append(c.IDs, uint64(c.Servers[i].Server.MemberID()))
		c.Endpoints = append(c.Endpoints, c.Servers[i].Clients[0].Addr().String())
	}
	t.Cleanup(func() {
		for i := range c.Servers {
			c.Stop(i)
		}
	})
	for _, ep := range c.Endpoints {
		c.Clients = append(c.Clients, c.client(t, ep))
	}
	c.Client = c.client(t, c.Endpoints...)
	return c
}

func (c *Cluster) client(t testing.TB, eps ...string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// Launch starts member i from its directory (a new one the first time),
// without waiting for it.
func (c *Cluster) Launch(t testing.TB, i int) {
	t.Helper()
	cfg := embed.NewConfig()
	cfg.Name, cfg.Dir = c.Names[i], c.Dirs[i]
	cfg.Logger, cfg.LogLevel = "zap", "error"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{c.urls[i]}, []url.URL{c.urls[i]}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{c.peers[i]}, []url.URL{c.peers[i]}
	cfg.InitialCluster, cfg.InitialClusterToken, cfg.ClusterState = c.initial, c.token, embed.ClusterStateFlagNew
	cfg.TickMs, cfg.ElectionMs = 100, c.electionMs
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatalf("start member %s: %v", c.Names[i], err)
	}
	c.Servers[i] = e
}

// Rejoin starts member i again on an empty data directory (the old one is
// the caller's to move aside) with --initial-cluster-state=existing and
// initial as --initial-cluster: a member removed and added back, started
// as etcd's replacement procedure says. Wait with Ready; its new ID is in
// IDs once it serves.
func (c *Cluster) Rejoin(t testing.TB, i int, initial string) {
	t.Helper()
	c.Stop(i)
	cfg := embed.NewConfig()
	cfg.Name, cfg.Dir = c.Names[i], c.Dirs[i]
	cfg.Logger, cfg.LogLevel = "zap", "error"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{c.urls[i]}, []url.URL{c.urls[i]}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{c.peers[i]}, []url.URL{c.peers[i]}
	cfg.InitialCluster, cfg.InitialClusterToken, cfg.ClusterState = initial, c.token, embed.ClusterStateFlagExisting
	cfg.TickMs, cfg.ElectionMs = 100, c.electionMs
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatalf("start member %s again: %v", c.Names[i], err)
	}
	c.Servers[i] = e
}

// PeerURL is member i's peer URL.
func (c *Cluster) PeerURL(i int) string { return c.peers[i].String() }

// Ready waits until member i serves.
func (c *Cluster) Ready(t testing.TB, i int) {
	t.Helper()
	select {
	case <-c.Servers[i].Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		t.Fatalf("member %s did not become ready", c.Names[i])
	}
	if i < len(c.IDs) {
		c.IDs[i] = uint64(c.Servers[i].Server.MemberID())
	}
}

// Stop stops member i, once.
func (c *Cluster) Stop(i int) {
	if c.Servers[i] != nil {
		c.Servers[i].Close()
		c.Servers[i] = nil
	}
}

// Leader is the index of the member every running member names as the
// leader, waiting up to a minute for them to agree.
func (c *Cluster) Leader(t testing.TB) int {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		named := map[uint64]int{}
		running := 0
		for i, e := range c.Servers {
			if e == nil {
				continue
			}
			running++
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			st, err := c.Clients[i].Status(ctx, c.Endpoints[i])
			cancel()
			if err == nil {
				named[st.Leader]++
			}
		}
		for i, e := range c.Servers {
			if e != nil && named[c.IDs[i]] == running {
				return i
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the members do not agree on a leader: %v", named)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
