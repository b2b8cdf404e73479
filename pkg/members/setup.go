package members

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/regghost/regghost/pkg/etcdmembers"
	"github.com/regghost/regghost/pkg/session"
)

// Fallback are endpoints to reach the cluster by when none given answers:
// the client URLs of the members a replacement left standing, as its
// record holds them.
type Fallback struct {
	// Endpoints are the client URLs to try.
	Endpoints []string
	// Cluster is the etcd cluster's ID they must answer as.
	Cluster string
	// From names where they were read (the record's path).
	From string
}

// Setup fills o with what s reaches, from wherever the operator stands.
// The endpoints given are asked who they are (the member being replaced,
// or a learner, answers too); the member list is read from one that is a
// voter; o.Client is then a client on every voting member's client URLs,
// so that nothing after depends on the endpoint given. When no endpoint
// given answers, or only a learner does, o.Fallback's endpoints are
// tried, and must answer as its cluster. It fills the configuration each
// member's own client is made from, the registry prefix, and a Timeout of
// twice the dial timeout (a member that does not answer costs that,
// once). done closes the client.
func Setup(ctx context.Context, s *session.Settings, o Options) (Options, func(), error) {
	s.SayUsing()
	if o.Timeout == 0 {
		o.Timeout = 2 * s.Etcd.DialTimeout
	}
	o.Registry = s.Prefix
	cl, err := reach(ctx, s, nil)
	if err != nil && o.Fallback != nil && len(o.Fallback.Endpoints) > 0 {
		o.progress("%s; reaching the cluster through the client URLs %s recorded: %s", firstLine(err), o.Fallback.From, strings.Join(o.Fallback.Endpoints, ","))
		var ferr error
		if cl, ferr = reach(ctx, s, o.Fallback.Endpoints); ferr != nil {
			return o, nil, fmt.Errorf("%w; through the client URLs %s recorded: %v", err, o.Fallback.From, ferr)
		}
		if cl.ID != o.Fallback.Cluster {
			return o, nil, fmt.Errorf("%w; the client URLs %s recorded answer as etcd cluster %s, not %s: that record is of another cluster", err, o.Fallback.From, cl.ID, o.Fallback.Cluster)
		}
		err = nil
	}
	if err != nil {
		return o, nil, err
	}
	cli, err := cl.Client(nil)
	if err != nil {
		return o, nil, err
	}
	o.Client, o.Config, o.Cluster = cli, cl.Config(), cl
	return o, func() { cli.Close() }, nil
}

// reach connects to the endpoints given (endpoints, when set, instead of
// s's) and reads the cluster through them.
func reach(ctx context.Context, s *session.Settings, endpoints []string) (*etcdmembers.Cluster, error) {
	conf := s.Etcd
	if endpoints != nil {
		conf.Endpoints = endpoints
	}
	cli, cfg, err := conf.ConnectAny(ctx)
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	cl, err := etcdmembers.Reach(ctx, cli, cfg, 2*conf.DialTimeout)
	if err != nil {
		if errors.Is(err, etcdmembers.ErrOnlyLearners) {
			return nil, err
		}
		return nil, fmt.Errorf("read the member list at %s: %w", strings.Join(cli.Endpoints(), ","), err)
	}
	return cl, nil
}
