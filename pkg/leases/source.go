package leases

import (
	"context"
	"net"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/pkg/apiview"
	"github.com/regghost/regghost/pkg/decrypt"
	"github.com/regghost/regghost/pkg/etcdwrite"
)

// Source is what a read of the cluster offers the audit beyond the keys:
// etcd's client (its leases, and which datastore answers), the API
// server (its clock, its port) and the decrypter.
type Source struct {
	// Client is nil offline (a db file).
	Client *clientv3.Client
	// API is nil when the API server is not used.
	API       *apiview.View
	Decrypter *decrypt.Decrypter
	// DB says the keyspace is a copy read offline: its events' ages are
	// not judged against today's clock, and nothing live is asked.
	DB bool
	// Clock is this machine's clock (time.Now when nil).
	Clock func() time.Time
}

// probeTimeout is how long a masterlease's address may take to accept a
// TCP connection before it is called not served.
const probeTimeout = 3 * time.Second

// From fills in what o asks the cluster: the granted TTL of each lease
// and the leases etcd holds (online), whether the datastore is kine (its
// "lease" is a TTL), the decrypter, the API server's clock (ages are
// judged by the servers' clocks) and whether a kube-apiserver answers at a
// masterlease's address (a TCP connection to the port it names, else the
// API server's own; nothing sent, no credential).
func (o Options) From(ctx context.Context, s Source) Options {
	clock := s.Clock
	if clock == nil {
		clock = time.Now
	}
	if o.Now == nil {
		o.Now = clock
	}
	if s.DB {
		o.NoAges = true
	}
	if cli := s.Client; cli != nil && !s.DB {
		if ds, err := etcdwrite.DetectDatastore(ctx, cli); err == nil && ds.Limited() {
			o.LeaseIsTTL = true
		}
		if !o.LeaseIsTTL {
			o.LeaseTTL = leaseTTL(cli)
		}
		o.Granted = func(ctx context.Context) ([]int64, error) {
			r, err := cli.Leases(ctx)
			if err != nil {
				return nil, err
			}
			ids := make([]int64, len(r.Leases))
			for i, l := range r.Leases {
				ids[i] = int64(l.ID)
			}
			return ids, nil
		}
	}
	if d := s.Decrypter; d != nil {
		registry := o.Registry
		o.Open = func(ctx context.Context, key string, value []byte) ([]byte, error) {
			plain, _, err := d.Open(ctx, key, GroupResourceOf(registry, key), value)
			return plain, err
		}
	}
	if s.API != nil && !s.DB {
		if now, err := s.API.Now(ctx); err == nil {
			offset := now.Sub(clock())
			o.Now = func() time.Time { return clock().Add(offset) }
		}
		// A masterlease names an address, not a port (the lease
		// reconciler writes none): kube-apiserver's own port is asked.
		_, apiPort, err := net.SplitHostPort(strings.TrimPrefix(s.API.Address(), "https://"))
		if err != nil || apiPort == "" {
			apiPort = "443"
		}
		o.Serves = Dialer(apiPort, probeTimeout)
	}
	return o
}

// leaseTTL asks etcd the TTL a lease was granted with.
func leaseTTL(cli *clientv3.Client) func(ctx context.Context, id int64) (int64, error) {
	return func(ctx context.Context, id int64) (int64, error) {
		r, err := cli.TimeToLive(ctx, clientv3.LeaseID(id))
		if err != nil {
			return 0, err
		}
		return r.GrantedTTL, nil
	}
}
