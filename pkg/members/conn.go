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
