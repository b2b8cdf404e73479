package members

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/pkg/session"
)

// When the keys are compared one by one.
const (
	// KeysAuto compares the keys when the hashes do not show that every
	// member agrees.
	KeysAuto = "auto"
	// KeysAlways compares the keys even when every hash agrees.
	KeysAlways = "always"
	// KeysNever compares the hashes, leases and member lists only.
	KeysNever = "never"
)

// KeysModes are the values of Options.Keys.
var KeysModes = []string{KeysAuto, KeysAlways, KeysNever}

// Defaults of Options.
const (
	// DefaultInterval is the time between the two hash samples.
	DefaultInterval = 2 * time.Second
	// DefaultMaxKeys is how many differing keys are listed one by one.
	DefaultMaxKeys = 1000
	// RecheckLimit is how many differing keys a comparison of current
	// values reads again, to tell a write in flight from a difference.
	RecheckLimit = 10000
	// DivergenceSlack is how far apart two members' revisions may be
	// beyond what their applied indexes allow before their revisions are
	// called diverged (a Status reads its revision and applied index at
	// slightly different instants).
	DivergenceSlack = 1000
)

// Options say how to reach the members and how to compare them.
type Options struct {
	// Client reaches the cluster through any member: the member list and
	// the alarms.
	Client *clientv3.Client
	// Config is the client configuration each member's own client is made
	// from: the same TLS files and credentials, its endpoint alone.
	Config clientv3.Config
	// Registry is the prefix kube-apiserver stores under: keys below it
	// are named by resource, namespace and name.
	Registry string
	// Reads say how a keyspace is read (page size, streaming, pace).
	Reads session.Reads
	// Interval is the time between the two hash samples (DefaultInterval
	// when 0).
	Interval time.Duration
	// Timeout bounds each member's Status and small reads (5s when 0).
	Timeout time.Duration
	// Keys is KeysAuto (""), KeysAlways or KeysNever.
	Keys string
	// Current compares the current values from the start, without a
	// shared revision.
	Current bool
	// MaxKeys is how many differing keys are listed one by one
	// (DefaultMaxKeys when 0; -1: all).
	MaxKeys int
	// Progress, when set, is told each step in a few words.
	Progress func(string)
}

func (o *Options) interval() time.Duration {
	if o.Interval > 0 {
		return o.Interval
	}
	return DefaultInterval
}

func (o *Options) timeout() time.Duration {
	if o.Timeout > 0 {
		return o.Timeout
	}
	return 5 * time.Second
}

func (o *Options) maxKeys() int {
	switch {
	case o.MaxKeys == 0:
		return DefaultMaxKeys
	case o.MaxKeys < 0:
		return int(^uint(0) >> 1)
	}
	return o.MaxKeys
}

func (o *Options) progress(format string, args ...any) {
	if o.Progress != nil {
		o.Progress(fmt.Sprintf(format, args...))
	}
}

// Validate checks the options a person gives.
func (o *Options) Validate() error {
	switch o.Keys {
	case "", KeysAuto, KeysAlways, KeysNever:
	default:
		return fmt.Errorf("keys %q: want one of auto, always, never", o.Keys)
	}
	if o.Current && o.Keys == KeysNever {
		return fmt.Errorf("current values are a way to compare the keys, which keys %q leaves out", KeysNever)
	}
	if o.MaxKeys < -1 {
		return fmt.Errorf("max keys must be -1 (all), 0 (the default) or more, got %d", o.MaxKeys)
	}
	return nil
}

// Setup fills o with what s reaches: the client on the endpoints that
// answer, the configuration each member's own client is made from, the
// registry prefix, and a Timeout of twice the dial timeout (a member that
// does not answer costs that, once). done closes the client.
func Setup(ctx context.Context, s *session.Settings, o Options) (Options, func(), error) {
	cli, cfg, err := s.ConnectConfig(ctx)
	if err != nil {
		return o, nil, err
	}
	o.Client, o.Config, o.Registry = cli, cfg, s.Prefix
	if o.Timeout == 0 {
		o.Timeout = 2 * s.Etcd.DialTimeout
	}
	return o, func() { cli.Close() }, nil
}
