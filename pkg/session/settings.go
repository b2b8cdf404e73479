package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/pkg/apiview"
	"github.com/regghost/regghost/pkg/decrypt"
	"github.com/regghost/regghost/pkg/etcdconn"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/nodeconfig"
	"github.com/regghost/regghost/pkg/notice"
	"github.com/regghost/regghost/pkg/objread"
)

// Settings say how to reach a cluster: etcd or a db file, the prefix
// kube-apiserver stores under, its encryption config and the API server.
type Settings struct {
	Etcd   etcdconn.Config
	Prefix string
	// Node is what this node's kube-apiserver configuration says, once
	// Discover read it (nil before, offline, or when none was found).
	Node *nodeconfig.Found
	// Kubeconfig and Context choose the API server; NoAPI leaves it out.
	Kubeconfig, Context string
	NoAPI               bool
	// DB is an etcd db file to read instead of a live etcd.
	DB string
	// EncryptionConfig is a kube-apiserver EncryptionConfiguration file.
	EncryptionConfig string
	// NodeRoot is where the node's files are, for discovery.
	NodeRoot string
	// Given names, for each setting given explicitly, the flag or variable
	// it came from; discovery leaves those alone. Nil: discovery takes
	// nothing (it cannot tell what was given).
	Given func() nodeconfig.Given
	// Notices receives what discovery took and what a db file holds
	// (nil: said nowhere).
	Notices notice.Func

	discovered sync.Once
	// pending are the lines discovery has to say (what is used, notes),
	// said once, when etcd is first connected to (SayUsing): a usage error
	// found before stays one line.
	pending []string
	said    sync.Once
}

// Discover reads kube-apiserver's own etcd settings from the node's files,
// once, and fills each setting Given does not name: endpoints, TLS files,
// prefix and encryption config. What it used and where each setting came
// from, and a given prefix or encryption config that disagrees with the
// node's, are said by SayUsing (connecting says them first).
func (s *Settings) Discover() {
	s.discovered.Do(func() {
		if s.DB != "" || s.Given == nil {
			return
		}
		f, err := nodeconfig.Discover(s.NodeRoot)
		if err != nil {
			if !errors.Is(err, nodeconfig.ErrNotFound) {
				s.pending = append(s.pending, fmt.Sprintf("could not read this node's kube-apiserver configuration (%v); nothing was taken from it", firstLine(err)))
			}
			// What is used is said whatever gave it: flags, variables, defaults.
			f = &nodeconfig.Found{}
		}
		s.Node = f
		cur := nodeconfig.Settings{Endpoints: s.Etcd.Endpoints, CACert: s.Etcd.CACert, Cert: s.Etcd.Cert, Key: s.Etcd.Key,
			Prefix: s.Prefix, EncryptionConfig: s.EncryptionConfig}
		m := nodeconfig.Fill(cur, s.Given(), f)
		n := m.Settings
		s.Etcd.Endpoints, s.Etcd.CACert, s.Etcd.Cert, s.Etcd.Key = n.Endpoints, n.CACert, n.Cert, n.Key
		s.Prefix, s.EncryptionConfig = n.Prefix, n.EncryptionConfig
		if m.Line != "" {
			s.pending = append(s.pending, m.Line)
		}
		s.pending = append(s.pending, m.Notes...)
	})
}

// SayUsing says, once, what discovery found: the settings used and where
// each came from, then its notes. Connecting to etcd says it first.
func (s *Settings) SayUsing() {
	s.Discover()
	s.said.Do(func() {
		for _, l := range s.pending {
			s.Notices.Info(l)
		}
	})
}

// Connect opens etcd, after discovery, having said what it uses.
func (s *Settings) Connect(ctx context.Context) (*clientv3.Client, error) {
	s.SayUsing()
	return s.Etcd.Connect(ctx)
}

// ConnectConfig is Connect with the client configuration it was made
// from, for the clients a command makes beside it (one per member, a
// snapshot's). The client is closed when the configuration cannot be had.
func (s *Settings) ConnectConfig(ctx context.Context) (*clientv3.Client, clientv3.Config, error) {
	cli, err := s.Connect(ctx)
	if err != nil {
		return nil, clientv3.Config{}, err
	}
	cfg, err := s.Etcd.ClientConfig()
	if err != nil {
		cli.Close()
		return nil, clientv3.Config{}, err
	}
	return cli, cfg, nil
}

// Bounded bounds ctx by the command timeout and opens etcd; done cancels
// and closes.
func (s *Settings) Bounded(ctx context.Context) (context.Context, *clientv3.Client, func(), error) {
	ctx, cancel := context.WithTimeout(ctx, s.Etcd.CommandTimeout)
	cli, err := s.Connect(ctx)
	if err != nil {
		cancel()
		return nil, nil, nil, err
	}
	return ctx, cli, func() { cli.Close(); cancel() }, nil
}

// Decrypter loads the encryption config, if there is one (nil without).
func (s *Settings) Decrypter(ctx context.Context) (*decrypt.Decrypter, error) {
	if s.EncryptionConfig == "" {
		return nil, nil
	}
	d, err := decrypt.Load(ctx, s.EncryptionConfig)
	if err != nil {
		return nil, err
	}
	d.Root = s.NodeRoot
	return d, nil
}

// CheckFlags refuses settings given that cannot be used, before anything
// is read: timeouts that are not positive, a --max-request-bytes below
// 64 KiB, a prefix that does not start and end with /, and what
// CheckAPIFlags refuses. Its errors name the flags.
func (s *Settings) CheckFlags() error {
	if s.Etcd.DialTimeout <= 0 {
		return fmt.Errorf("--dial-timeout must be positive, got %s", s.Etcd.DialTimeout)
	}
	if s.Etcd.CommandTimeout <= 0 {
		return fmt.Errorf("--command-timeout must be positive, got %s", s.Etcd.CommandTimeout)
	}
	if s.Etcd.MaxRequestBytes < 64<<10 {
		return fmt.Errorf("--max-request-bytes must be at least 65536 (etcd's default is %d), got %d", etcdwrite.DefaultMaxRequestBytes, s.Etcd.MaxRequestBytes)
	}
	if len(s.Prefix) == 0 || s.Prefix[0] != '/' || s.Prefix[len(s.Prefix)-1] != '/' {
		return fmt.Errorf("--etcd-prefix %q must start and end with /", s.Prefix)
	}
	return s.CheckAPIFlags()
}

// CheckAPIFlags refuses a --kubeconfig or --context the user gave that
// cannot be used (a file that is not there, a context it does not hold):
// never a silent fallback to verdicts from etcd alone.
func (s *Settings) CheckAPIFlags() error {
	if s.NoAPI || s.DB != "" || (s.Kubeconfig == "" && s.Context == "") {
		return nil
	}
	if _, err := (apiview.Options{Kubeconfig: s.Kubeconfig, Context: s.Context}).RESTConfig(); err != nil {
		what := "--kubeconfig " + s.Kubeconfig
		if s.Context != "" {
			what = strings.TrimPrefix(what+" --context "+s.Context, "--kubeconfig  ")
		}
		line, _, _ := strings.Cut(err.Error(), "\n")
		return fmt.Errorf("%s cannot be used: %s", what, line)
	}
	return nil
}

// API connects to the API server. It returns nil and the reason when the
// API server is not used or cannot be reached: readers then work from etcd
// alone.
func (s *Settings) API() (*apiview.View, string) {
	if s.NoAPI {
		return nil, "--no-api given"
	}
	if s.DB != "" {
		return nil, "reading the db file " + s.DB + " offline"
	}
	return apiview.Open(apiview.Options{Kubeconfig: s.Kubeconfig, Context: s.Context, Timeout: s.Etcd.DialTimeout * 2})
}

// ContentReader is the read-through for values a check needs the fields
// of: decrypted with the encryption config, else read through the API
// server when it answers.
func (s *Settings) ContentReader(ctx context.Context) (*objread.Reader, error) {
	r := &objread.Reader{Registry: s.Prefix}
	dec, err := s.Decrypter(ctx)
	if err != nil {
		return nil, err
	}
	if dec != nil {
		r.Decrypter = dec
	}
	if view, _ := s.API(); view != nil {
		r.API = view
	}
	return r, nil
}

func firstLine(err error) string {
	line, _, _ := strings.Cut(err.Error(), "\n")
	return line
}
