package migrate

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/regghost/regghost/pkg/apiview"
	"github.com/regghost/regghost/pkg/decrypt"
	"github.com/regghost/regghost/pkg/etcdscan"
)

// Source is what a migration reads: one pass over etcd (or a db file) at
// one revision, and the API server, as the command opened them.
type Source struct {
	// Store is the read the plan is counted from; Prefix its registry.
	Store     etcdscan.Store
	Prefix    string
	Decrypter *decrypt.Decrypter
	// API is the API server (nil: none, Why says why).
	API *apiview.View
	Why string
	// OpenStore opens a new read of etcd, for each count again.
	OpenStore func(ctx context.Context) (etcdscan.Store, func(), error)
	// Connect gives a client of etcd bounded by the command's time, for
	// the old revisions (nil: a db file, which has none to read).
	Connect func(ctx context.Context) (context.Context, *clientv3.Client, func(), error)
}

// Prepared is a migration's plan and what its run reads again.
type Prepared struct {
	Plan *Census
	// Servers are the kube-apiservers asked once (nil without an API).
	Servers *Servers
	// Again counts the resource again from a new read of etcd.
	Again func(ctx context.Context) (*Census, error)
	// History reads a census's old revisions (nil: a db file).
	History func(ctx context.Context, c *Census) (*History, error)
	api     *apiview.View
	dec     *decrypt.Decrypter
}

// Prepare resolves name (plural.group), judges a built-in resource
// against the release target names ("" this cluster's), asks every
// kube-apiserver once, and counts the plan from src's read. A usage
// error (pkg/usage) is what the person typed.
func Prepare(ctx context.Context, src Source, name, target string) (*Prepared, error) {
	p := &Prepared{api: src.API, dec: src.Decrypter}
	if src.API != nil {
		p.Servers = AskServers(ctx, src.API)
	}
	t, err := Resolve(ctx, src.Store, src.Prefix, src.Decrypter, name)
	if err != nil {
		return nil, err
	}
	t.Servers = p.Servers
	if err := JudgeBuiltin(ctx, &t, src.API, src.Why, target); err != nil {
		return nil, err
	}
	builtin := t.Builtin
	if p.Plan, err = Take(ctx, src.Store, src.Prefix, t, src.Decrypter); err != nil {
		return nil, err
	}
	p.Again = func(ctx context.Context) (*Census, error) {
		store, closeStore, err := src.OpenStore(ctx)
		if err != nil {
			return nil, err
		}
		defer closeStore()
		t, err := Resolve(ctx, store, src.Prefix, src.Decrypter, name)
		if err != nil {
			return nil, err
		}
		t.Servers = p.Servers
		if t.CRD == nil {
			t.Builtin = builtin
		}
		return Take(ctx, store, src.Prefix, t, src.Decrypter)
	}
	if src.Connect != nil {
		p.History = func(ctx context.Context, c *Census) (*History, error) {
			hctx, cli, done, err := src.Connect(ctx)
			if err != nil {
				return nil, err
			}
			defer done()
			return OldRevisions(hctx, cli, src.Prefix, c)
		}
	}
	return p, nil
}

// Evidence is what the dry run shows beside the plan: each key's verdict
// from its old revisions (none without history, or with no writer to
// judge by) and what regghost's backups under backupRoot hold of it.
func (p *Prepared) Evidence(ctx context.Context, backupRoot string) ([]KeyVerdict, Backups, error) {
	var keys []KeyVerdict
	var h *History
	if p.History != nil && p.Plan.Writer != "" {
		var herr error
		h, herr = p.History(ctx, p.Plan)
		keys = Verdicts(p.Plan, p.Plan, h, herr)
	}
	held, err := ReadBackups(ctx, backupRoot, p.Plan, Rotated(p.Plan, h), p.dec)
	return keys, held, err
}

// Clients are the API server's dynamic client for the rewrite, allowed
// two requests an object at perSecond (a read, the write: the client's
// own limit must not be the pace), and one reader per kube-apiserver
// asked (a version listed again is waited for on every one: any of them
// may take a rewrite).
func (p *Prepared) Clients(perSecond int) (dynamic.Interface, []Reader, error) {
	cfg := rest.CopyConfig(p.api.Config)
	cfg.QPS, cfg.Burst = float32(2*perSecond+10), 2*perSecond+10
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("api server client: %w", err)
	}
	var readers []Reader
	for _, v := range p.Servers.Views() {
		d, err := dynamic.NewForConfig(v.Config)
		if err != nil {
			return nil, nil, fmt.Errorf("api server client for %s: %w", v.Address(), err)
		}
		readers = append(readers, Reader{Address: v.Address(), Dynamic: d})
	}
	return dyn, readers, nil
}
