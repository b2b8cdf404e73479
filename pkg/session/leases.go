package session

import (
	"context"
	"time"

	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/leases"
)

// LeasesOptions are the leases audit's options for what r reads: the
// kube-apiserver settings judged (and the line that says where each came
// from), and what the live cluster answers (etcd's leases, the API
// server's clock, read by now). done releases the etcd client it opened.
func (s *Settings) LeasesOptions(ctx context.Context, r *Read, namespace string, given leases.Given, now func() time.Time) (opts leases.Options, settings string, done func(), err error) {
	opts, settings = leases.Judged(leases.Options{Registry: s.Prefix, Namespace: namespace}, given, s.Node)
	src := leases.Source{API: r.API, Decrypter: r.Decrypter, DB: r.DB, Clock: now}
	done = func() {}
	if !r.DB {
		_, etcd, release, err := s.Bounded(ctx)
		if err != nil {
			return opts, settings, nil, err
		}
		src.Client, done = etcd, release
	}
	return opts.From(ctx, src), settings, done, nil
}

// LeasesRemovalBudget is what a removal of namespace's expired events
// (every namespace's when "") would delete, counted before the audit reads
// anything, for leases.Budget.Fits; oneKey is a datastore that deletes one
// key a transaction (kine).
func (s *Settings) LeasesRemovalBudget(ctx context.Context, namespace string, pacing etcdwrite.Pacing, oneKey bool) (leases.Budget, error) {
	cctx, etcd, done, err := s.Bounded(ctx)
	if err != nil {
		return leases.Budget{}, err
	}
	defer done()
	return leases.RemovalBudget(cctx, etcd, s.Prefix, namespace, pacing, oneKey)
}
