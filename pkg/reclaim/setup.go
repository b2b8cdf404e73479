package reclaim

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/regghost/regghost/pkg/decrypt"
	"github.com/regghost/regghost/pkg/nodeconfig"
	"github.com/regghost/regghost/pkg/session"
)

// Setup fills o with what s reaches: the etcd client and its configuration,
// the node's etcd manifest (data directories and quotas; a manifest that
// cannot be read is said on o.Notices), the prefix and the decrypter of the
// cluster's identity. done closes the client.
func Setup(ctx context.Context, s *session.Settings, o Options) (Options, func(), error) {
	cli, cfg, err := s.ConnectConfig(ctx)
	if err != nil {
		return o, nil, err
	}
	dec, err := s.Decrypter(ctx)
	if err != nil {
		cli.Close()
		return o, nil, err
	}
	node, err := nodeconfig.DiscoverEtcd(s.NodeRoot)
	if err != nil && !errors.Is(err, nodeconfig.ErrNotFound) {
		line, _, _ := strings.Cut(err.Error(), "\n")
		o.Notices.Info(fmt.Sprintf("could not read this node's etcd manifest (%s); no data directory or quota is taken from it", line))
	}
	o.Client, o.Config, o.Node, o.Prefix, o.Decrypt = cli, cfg, node, s.Prefix, decrypt.Namespaces(dec)
	// A member that does not answer costs this, once: etcd's client waits
	// for a connection until the deadline.
	o.CheckTimeout = 2 * s.Etcd.DialTimeout
	return o, func() { cli.Close() }, nil
}
