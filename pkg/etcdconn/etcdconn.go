// Package etcdconn opens etcd clients from etcdctl-style settings.
package etcdconn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
)

// Config holds what etcdctl calls its global flags.
type Config struct {
	Endpoints []string
	CACert    string
	Cert      string
	Key       string
	// User is etcd's user for clusters with auth: "name", or
	// "name:password" as etcdctl takes it; Password is the password when
	// User holds only the name.
	User     string
	Password string
	// AskPassword asks for the password of User when nothing gave it, the
	// first time etcd is connected to (nil: not asked); a command that
	// never connects never asks.
	AskPassword func() (string, error) `json:"-"`
	// InsecureSkipVerify skips the check of etcd's server certificate.
	InsecureSkipVerify bool
	DialTimeout        time.Duration
	CommandTimeout     time.Duration
	// DialOptions are added to the client's gRPC options (serve counts
	// requests and bytes with a stats handler).
	DialOptions []grpc.DialOption
	// MaxRequestBytes is the largest request the etcd accepts (its
	// --max-request-bytes): the client's send limit is raised to carry it.
	MaxRequestBytes int
}

// SendLimit is the gRPC send limit a client needs to send requests of up
// to maxRequestBytes: the client's default (2 MiB) when that holds them,
// else the limit plus the headroom etcd's server takes for gRPC (512 KiB).
func SendLimit(maxRequestBytes int) int {
	const clientDefault, headroom = 2 << 20, 512 << 10
	return max(clientDefault, maxRequestBytes+headroom)
}

// AskPasswordNow asks for the password of User now, when it will be asked
// (User without a password, someone to ask): a command that catches
// interrupts asks before it does, so an interrupt at the prompt still
// ends it.
func (c *Config) AskPasswordNow() error {
	if c.User == "" || c.Password != "" || c.AskPassword == nil || strings.Contains(c.User, ":") {
		return nil
	}
	// Never asked only to be refused.
	if ep := plaintextRemote(c.Endpoints, c.CACert != "" || c.Cert != "" || c.InsecureSkipVerify); ep != "" {
		return errClearPassword(ep)
	}
	pw, err := c.AskPassword()
	if err != nil {
		return err
	}
	c.Password = pw
	return nil
}

// ClientConfig builds a clientv3 configuration, loading and checking the TLS files.
func (c *Config) ClientConfig() (clientv3.Config, error) {
	var eps []string
	for _, e := range c.Endpoints {
		if e = strings.TrimSpace(e); e != "" {
			eps = append(eps, e)
		}
	}
	if len(eps) == 0 {
		return clientv3.Config{}, errors.New("no etcd endpoint: pass --endpoints or set ETCDCTL_ENDPOINTS")
	}
	cfg := clientv3.Config{Endpoints: eps, DialTimeout: c.DialTimeout, Logger: zap.NewNop(), DialOptions: c.DialOptions,
		MaxCallSendMsgSize: SendLimit(c.MaxRequestBytes)}
	if (c.Cert == "") != (c.Key == "") {
		return cfg, errors.New("--cert and --key go together")
	}
	if c.CACert != "" || c.Cert != "" || c.InsecureSkipVerify {
		for _, f := range []string{c.CACert, c.Cert, c.Key} {
			if f == "" {
				continue
			}
			if _, err := os.Stat(f); err != nil {
				return cfg, fmt.Errorf("etcd TLS file: %w", err)
			}
		}
		if err := checkClientFiles(c.Cert, c.Key); err != nil {
			return cfg, err
		}
		info := transport.TLSInfo{TrustedCAFile: c.CACert, CertFile: c.Cert, KeyFile: c.Key, InsecureSkipVerify: c.InsecureSkipVerify}
		tlsCfg, err := info.ClientConfig()
		if err != nil {
			return cfg, fmt.Errorf("load etcd TLS files: %w", err)
		}
		cfg.TLS = tlsCfg
	}
	if c.User != "" {
		name, password, ok := strings.Cut(c.User, ":")
		if !ok {
			password = c.Password
		}
		if name == "" {
			return cfg, errors.New(`--user must name the etcd user ("name", or "name:password")`)
		}
		if ep := plaintextRemote(eps, cfg.TLS != nil); ep != "" {
			return cfg, errClearPassword(ep)
		}
		if password == "" && c.AskPassword != nil {
			var err error
			if password, err = c.AskPassword(); err != nil {
				return cfg, err
			}
		}
		if password == "" {
			return cfg, fmt.Errorf("--user %s needs a password: --password, ETCDCTL_PASSWORD, or run on a terminal to be asked", name)
		}
		cfg.Username, cfg.Password = name, password
	}
	return cfg, nil
}

// plaintextRemote is the first endpoint a client reaches without TLS over
// the network ("" when none). As clientv3 does, the first endpoint's scheme
// decides for all: http:// and unix:// dial every endpoint in the clear,
// https:// and unixs:// with TLS, no scheme with TLS when TLS files are
// given. Loopback addresses, localhost and unix sockets are this node.
func plaintextRemote(endpoints []string, tls bool) string {
	if len(endpoints) == 0 {
		return ""
	}
	secure := tls
	switch scheme, _ := splitScheme(endpoints[0]); scheme {
	case "https", "unixs":
		secure = true
	case "http", "unix":
		secure = false
	}
	if secure {
		return ""
	}
	for _, ep := range endpoints {
		scheme, rest := splitScheme(ep)
		if scheme == "unix" || scheme == "unixs" {
			continue
		}
		host := rest
		if h, _, err := net.SplitHostPort(rest); err == nil {
			host = h
		}
		if host == "localhost" {
			continue
		}
		if ip := net.ParseIP(strings.Trim(host, "[]")); ip != nil && ip.IsLoopback() {
			continue
		}
		return ep
	}
	return ""
}

// splitScheme splits an endpoint into its scheme ("" when none) and the
// rest: "unix:/run/etcd.sock" and "unix:///run/etcd.sock" are both unix.
func splitScheme(ep string) (scheme, rest string) {
	if s, r, ok := strings.Cut(ep, "://"); ok {
		return s, r
	}
	for _, s := range []string{"unixs", "unix"} {
		if strings.HasPrefix(ep, s+":") {
			return s, strings.TrimPrefix(ep, s+":")
		}
	}
	return "", ep
}

// errClearPassword is the refusal of a password that would cross the
// network in the clear.
func errClearPassword(ep string) error {
	return fmt.Errorf("--user would send etcd's password in the clear to %s: give that member's https:// endpoint (with --cacert), or run on its node against 127.0.0.1", ep)
}

// CheckCredentials refuses a client configuration that would send etcd's
// user and password, or the token they get, in the clear to another host.
// Every client regghost opens goes through it (NewClient): those built for
// the members' client URLs from the member list too.
func CheckCredentials(cfg clientv3.Config) error {
	if cfg.Username == "" {
		return nil
	}
	if ep := plaintextRemote(cfg.Endpoints, cfg.TLS != nil); ep != "" {
		return errClearPassword(ep)
	}
	return nil
}

// NewClient is clientv3.New behind CheckCredentials.
func NewClient(cfg clientv3.Config) (*clientv3.Client, error) {
	if err := CheckCredentials(cfg); err != nil {
		return nil, err
	}
	return clientv3.New(cfg)
}

// Connect opens a client on the endpoints that answer. Each endpoint is
// probed on its own, with its own dial timeout, so a dead member costs at
// most that. When none answers, the first endpoint's failure is explained in
// one sentence naming the flag to fix (CA, client certificate, expiry, name,
// user).
func (c *Config) Connect(ctx context.Context) (*clientv3.Client, error) {
	cfg, err := c.ClientConfig()
	if err != nil {
		return nil, err
	}
	live, statuses := c.probe(ctx, cfg)
	if len(live) == 0 {
		return nil, c.unreachable(cfg, statuses)
	}
	cfg.Endpoints = live
	cli, err := NewClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to etcd %s: %w", strings.Join(live, ","), err)
	}
	sctx, cancel := context.WithTimeout(ctx, c.DialTimeout)
	defer cancel()
	if _, err := cli.Get(sctx, "\x00", clientv3.WithCountOnly()); err != nil {
		cli.Close()
		if reason := authReason(err); reason != "" {
			return nil, errors.New(reason)
		}
		return nil, fmt.Errorf("etcd %s answers status but not reads: %w", strings.Join(live, ","), err)
	}
	return cli, nil
}

// ConnectAny opens a client on the endpoints that answer Status, whatever
// they are: a learner (which serves Status and serializable reads only)
// answers too. It is for the commands that walk the members and take the
// member list from whichever member answers (etcdmembers.Reach); the
// configuration is returned for the clients they make beside it. When
// none answers, the first endpoint's failure is explained as Connect
// explains it.
func (c *Config) ConnectAny(ctx context.Context) (*clientv3.Client, clientv3.Config, error) {
	cfg, err := c.ClientConfig()
	if err != nil {
		return nil, cfg, err
	}
	live, statuses := c.probe(ctx, cfg)
	if len(live) == 0 {
		return nil, cfg, c.unreachable(cfg, statuses)
	}
	one := cfg
	one.Endpoints = live
	cli, err := NewClient(one)
	if err != nil {
		return nil, cfg, fmt.Errorf("connect to etcd %s: %w", strings.Join(live, ","), err)
	}
	return cli, cfg, nil
}

// probe asks every endpoint for its status in parallel, each with its own
// client and dial timeout, and returns those that answered, in the given
// order, and every endpoint's error.
func (c *Config) probe(ctx context.Context, cfg clientv3.Config) ([]string, []error) {
	errs := make([]error, len(cfg.Endpoints))
	var wg sync.WaitGroup
	for i, ep := range cfg.Endpoints {
		wg.Add(1)
		go func() {
			defer wg.Done()
			one := cfg
			one.Endpoints = []string{ep}
			cli, err := NewClient(one)
			if err != nil {
				errs[i] = err
				return
			}
			defer cli.Close()
			sctx, cancel := context.WithTimeout(ctx, c.DialTimeout)
			defer cancel()
			_, errs[i] = cli.Status(sctx, ep)
		}()
	}
	wg.Wait()
	var live []string
	for i, ep := range cfg.Endpoints {
		if errs[i] == nil {
			live = append(live, ep)
		}
	}
	return live, errs
}

// unreachable explains why no endpoint answered.
func (c *Config) unreachable(cfg clientv3.Config, errs []error) error {
	ep := cfg.Endpoints[0]
	if reason := authReason(errs[0]); reason != "" {
		return errors.New(reason)
	}
	if reason := explain(ep, cfg.TLS, c.DialTimeout); reason != "" {
		if len(cfg.Endpoints) > 1 {
			reason += fmt.Sprintf(" (and none of the other %d endpoints answered)", len(cfg.Endpoints)-1)
		}
		return fmt.Errorf("etcd is not reachable: %s", reason)
	}
	return fmt.Errorf("etcd %s is not reachable: %w", strings.Join(cfg.Endpoints, ","), errs[0])
}

// authReason explains etcd's authentication errors.
func authReason(err error) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "user name is empty"), strings.Contains(msg, "invalid auth token"):
		return "etcd requires user authentication: pass --user NAME (env ETCDCTL_USER) and its password on the terminal, or --password / ETCDCTL_PASSWORD"
	case strings.Contains(msg, "authentication failed"):
		return "etcd rejected --user: wrong name or password"
	case strings.Contains(msg, "permission denied"):
		return "the etcd user of --user may not read the keyspace: it needs read access to the registry prefix"
	}
	return ""
}
