package members

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/pkg/etcdconn"
)

// serializable is a KV whose reads are serializable: served by the member
// the client reaches from its own store, without asking the leader. A
// member that lost its quorum, or one etcd refuses writes to, still
// answers; and what it answers is its own data.
type serializable struct{ clientv3.KV }

// Get implements clientv3.KV.
func (s serializable) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	return s.KV.Get(ctx, key, append(opts[:len(opts):len(opts)], clientv3.WithSerializable())...)
}

// GetStream implements clientv3.KV.
func (s serializable) GetStream(ctx context.Context, key string, opts ...clientv3.OpOption) (clientv3.GetStreamChan, error) {
	return s.KV.GetStream(ctx, key, append(opts[:len(opts):len(opts)], clientv3.WithSerializable())...)
}

// conn is one member and a client whose only endpoint is that member.
type conn struct {
	// m is the member's place in the report's Members.
	m   int
	ep  string
	cli *clientv3.Client
}

// probeKey is the key a pacer's probe reads: inside the range a keyspace
// read reads (so a user allowed that read may read it), and a point
// lookup whatever the keyspace holds.
const probeKey = keyspaceStart

// probe is pkg/pace's probe of the member: a serializable count of one
// key, answered by the member alone from its own store. It costs the
// member nearly nothing and writes nothing, yet takes the paths another
// client's requests take: the member's gRPC server, its backend's read
// transaction (which waits while a batch commits), its CPU. A probe put
// would go through every member's WAL, and members only reads; etcd's own
// histograms (backend commit, WAL fsync) have buckets a doubling apart,
// too coarse for 1.5x, and time the disk, not the reads being paced.
func (c conn) probe(ctx context.Context) error {
	if _, err := c.cli.Get(ctx, probeKey, clientv3.WithCountOnly()); err != nil {
		return fmt.Errorf("probe the member at %s: %w", c.ep, err)
	}
	return nil
}

// dial opens a client whose only endpoint is ep, with o.Config's TLS files
// and credentials, whose KV reads serializably (its Get and GetStream: the
// readers of pkg/etcdscan take it as it is).
func (o *Options) dial(ep string) (*clientv3.Client, error) {
	cfg := o.Config
	cfg.Endpoints = []string{ep}
	cli, err := etcdconn.NewClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to member at %s: %w", ep, err)
	}
	cli.KV = serializable{cli.KV}
	return cli, nil
}
