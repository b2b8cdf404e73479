// Package etcdtest starts an embedded etcd server for unit tests and encodes
// objects the way kube-apiserver stores them.
package etcdtest

import (
	"bytes"
	"fmt"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
)

// Start runs a single-member etcd in a temporary directory until the test
// ends and returns a client and the client URL.
func Start(t testing.TB) (*clientv3.Client, string) {
	t.Helper()
	return StartWith(t, nil)
}

// StartWith is Start with the server's configuration changed by set
// (a quota, a data directory of the test's own) before it starts.
func StartWith(t testing.TB, set func(*embed.Config)) (*clientv3.Client, string) {
	t.Helper()
	_, cli, ep := StartServer(t, set)
	return cli, ep
}

// StartServer is StartWith that also returns what stops the server, for a
// test that stops it before its end.
func StartServer(t testing.TB, set func(*embed.Config)) (stop func(), cli *clientv3.Client, ep string) {
	t.Helper()
	cfg := embed.NewConfig()
	cfg.Dir = t.TempDir()
	cfg.Logger = "zap"
	cfg.LogLevel = "error"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	// Port 0 lets the kernel pick free ports.
	lc, _ := url.Parse("http://127.0.0.1:0")
	lp, _ := url.Parse("http://127.0.0.1:0")
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*lc}, []url.URL{*lc}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*lp}, []url.URL{*lp}
	cfg.InitialCluster = cfg.Name + "=" + lp.String()
	// A token of its own gives each test's etcd a cluster ID of its own
	// (it is derived from the peer URLs and the token), as real clusters have.
	cfg.InitialClusterToken = fmt.Sprintf("etcdtest-%d-%d", os.Getpid(), time.Now().UnixNano())
	if set != nil {
		set(cfg)
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatalf("start embedded etcd: %v", err)
	}
	stop = sync.OnceFunc(e.Close)
	t.Cleanup(stop)
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		t.Fatal("embedded etcd did not become ready")
	}
	ep = e.Clients[0].Addr().String()
	cli, err = clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatalf("embedded etcd client: %v", err)
	}
	t.Cleanup(func() { cli.Close() })
	return stop, cli, ep
}

// Encode writes obj as kube-apiserver stores it: the protobuf envelope.
func Encode(t testing.TB, obj runtime.Object) string {
	t.Helper()
	var buf bytes.Buffer
	if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(obj, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}
