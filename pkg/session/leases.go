package session

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/pkg/decrypt"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/leases"
	"github.com/regghost/regghost/pkg/usage"
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

// LeasesRequest is one run of regghost leases.
type LeasesRequest struct {
	// Namespace judges only its events ("": every namespace's).
	Namespace string
	Given     leases.Given
	// Remove is --confirm: the audit reads at the removal's floor, and an
	// --event-ttl shorter than the one configured, or a removal whose
	// slowest run cannot fit in ctx's deadline, is refused (a usage
	// error) before the audit reads anything.
	Remove bool
	// Pacing paces the removal (etcd's --max-request-bytes is filled in).
	Pacing etcdwrite.Pacing
	Now    func() time.Time
}

// LeasesRun is one audit of etcd's leases and what a removal of what
// outlived its TTL would delete.
type LeasesRun struct {
	Audit *leases.Audit
	// Settings says where each kube-apiserver setting judged came from.
	Settings string
	// Plan is what a removal deletes.
	Plan *leases.Removal
	// DB is an audit of a db file: never removed from.
	DB   bool
	s    *Settings
	read *Read
	opts leases.Options
	req  LeasesRequest
	done func()
	// etcd is the removal's connection, once Connect has opened it.
	etcd *clientv3.Client
}

// Leases audits etcd's leases at the pace etcd's own latency allows (the
// audit is a removal's first step, and both run beside writers). Close
// releases what it opened.
func (s *Settings) Leases(ctx context.Context, req LeasesRequest) (run *LeasesRun, err error) {
	req.Pacing.MaxRequestBytes = s.Etcd.MaxRequestBytes
	reads := ScanReads()
	reads.Adaptive, reads.MinKeysPerSecond = true, leases.AuditFloor
	if req.Remove {
		reads.MinKeysPerSecond = leases.RemovalFloor
	}
	r := &LeasesRun{s: s, req: req, done: func() {}}
	if r.read, err = s.Open(ctx, reads); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			r.Close()
		}
	}()
	r.DB = r.read.DB
	if req.Remove {
		if err := leases.ShorterThanConfigured(req.Given, s.Node); err != nil {
			return nil, usage.Mark(err)
		}
	}
	var release func()
	r.opts, r.Settings, release, err = s.LeasesOptions(ctx, r.read, req.Namespace, req.Given, req.Now)
	if err != nil {
		return nil, err
	}
	r.done = release
	if deadline, ok := ctx.Deadline(); ok && req.Remove {
		b, err := s.leasesRemovalBudget(ctx, req.Namespace, req.Pacing, r.oneKey())
		if err != nil {
			return nil, err
		}
		if err := b.Fits(time.Until(deadline), s.Etcd.CommandTimeout); err != nil {
			return nil, usage.Mark(err)
		}
	}
	if r.Audit, err = leases.Run(ctx, r.read.Store, r.opts); err != nil {
		return nil, err
	}
	r.Plan = leases.Plan(r.Audit, req.Namespace)
	return r, nil
}

// oneKey is kine, which keeps no leases: a key's lease ID is its TTL, one
// key a transaction.
func (r *LeasesRun) oneKey() bool { return r.opts.LeaseIsTTL }

// Fits refuses (a usage error) a removal of what the audit found that
// cannot finish before ctx's deadline: before anything is written.
func (r *LeasesRun) Fits(ctx context.Context) error {
	deadline, ok := ctx.Deadline()
	if !ok {
		return nil
	}
	return usage.Mark(r.Plan.Fits(r.req.Pacing, r.oneKey(), time.Until(deadline), r.s.Etcd.CommandTimeout))
}

// Connect opens the removal's connection to etcd: before the signal
// that stops the write is listened for, so an interrupt while it dials
// ends regghost. Close closes it.
func (r *LeasesRun) Connect(ctx context.Context) (err error) {
	r.etcd, err = r.s.Connect(ctx)
	return err
}

// Remove deletes the plan's keys through the protected write over the
// connection Connect opened, backed up under backupRoot; stop (a signal)
// ends it between transactions.
func (r *LeasesRun) Remove(ctx context.Context, backupRoot string, stop <-chan struct{}) (*leases.Removed, error) {
	if r.etcd == nil {
		return nil, fmt.Errorf("leases: not connected")
	}
	pacing := r.req.Pacing
	pacing.Stop = stop
	return leases.Remove(ctx, r.Plan, leases.RemoveOptions{Client: r.etcd, Prefix: r.s.Prefix, BackupRoot: backupRoot, Notices: r.s.Notices, Now: r.req.Now,
		Decrypt: decrypt.Namespaces(r.read.Decrypter), Serves: r.opts.Serves, Pacing: pacing})
}

// Close releases the audit's reads and etcd clients.
func (r *LeasesRun) Close() {
	if r.etcd != nil {
		r.etcd.Close()
	}
	r.done()
	r.read.Close()
}

// leasesRemovalBudget is what a removal of namespace's expired events
// (every namespace's when "") would delete, counted before the audit reads
// anything, for leases.Budget.Fits; oneKey is a datastore that deletes one
// key a transaction (kine).
func (s *Settings) leasesRemovalBudget(ctx context.Context, namespace string, pacing etcdwrite.Pacing, oneKey bool) (leases.Budget, error) {
	cctx, etcd, done, err := s.Bounded(ctx)
	if err != nil {
		return leases.Budget{}, err
	}
	defer done()
	return leases.RemovalBudget(cctx, etcd, s.Prefix, namespace, pacing, oneKey)
}
