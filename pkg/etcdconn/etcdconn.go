// Package etcdconn opens etcd clients from etcdctl-style settings.
package etcdconn

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Config holds what etcdctl calls its global flags.
type Config struct {
	Endpoints      []string
	CACert         string
	Cert           string
	Key            string
	DialTimeout    time.Duration
	CommandTimeout time.Duration
}

// FromEnv fills empty fields from ETCDCTL_ENDPOINTS, ETCDCTL_CACERT,
// ETCDCTL_CERT and ETCDCTL_KEY, as incident runbooks export them.
func (c *Config) FromEnv(explicitEndpoints bool) {
	if v := os.Getenv("ETCDCTL_ENDPOINTS"); v != "" && !explicitEndpoints {
		c.Endpoints = strings.Split(v, ",")
	}
	for _, e := range []struct {
		dst *string
		env string
	}{{&c.CACert, "ETCDCTL_CACERT"}, {&c.Cert, "ETCDCTL_CERT"}, {&c.Key, "ETCDCTL_KEY"}} {
		if *e.dst == "" {
			*e.dst = os.Getenv(e.env)
		}
	}
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
	cfg := clientv3.Config{Endpoints: eps, DialTimeout: c.DialTimeout, Logger: zap.NewNop()}
	if (c.Cert == "") != (c.Key == "") {
		return cfg, errors.New("--cert and --key go together")
	}
	if c.CACert != "" || c.Cert != "" {
		for _, f := range []string{c.CACert, c.Cert, c.Key} {
			if f == "" {
				continue
			}
			if _, err := os.Stat(f); err != nil {
				return cfg, fmt.Errorf("etcd TLS file: %w", err)
			}
		}
		info := transport.TLSInfo{TrustedCAFile: c.CACert, CertFile: c.Cert, KeyFile: c.Key}
		tlsCfg, err := info.ClientConfig()
		if err != nil {
			return cfg, fmt.Errorf("load etcd TLS files: %w", err)
		}
		cfg.TLS = tlsCfg
	}
	return cfg, nil
}

// Connect opens a client and proves the connection with a status call to the
// first endpoint, so that bad certificates or an unreachable endpoint fail
// here with a clear message instead of later inside a scan.
func (c *Config) Connect(ctx context.Context) (*clientv3.Client, error) {
	cfg, err := c.ClientConfig()
	if err != nil {
		return nil, err
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to etcd %s: %w", strings.Join(cfg.Endpoints, ","), err)
	}
	sctx, cancel := context.WithTimeout(ctx, c.DialTimeout)
	defer cancel()
	var lastErr error
	for _, ep := range cfg.Endpoints {
		if _, lastErr = cli.Status(sctx, ep); lastErr == nil {
			return cli, nil
		}
	}
	cli.Close()
	return nil, fmt.Errorf("etcd %s is not reachable: %w", strings.Join(cfg.Endpoints, ","), lastErr)
}
