package session

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/regghost/regghost/pkg/decrypt"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/impact"
	"github.com/regghost/regghost/pkg/repair"
)

// PurgeRequest is one run of regghost purge.
type PurgeRequest struct {
	Selector repair.Selector
	Impact   impact.Options
	// Scan scans what the purge reads (its namespace, its threshold).
	Scan func(ctx context.Context, r *Read) (*etcdscan.Report, error)
	// BackupRoot is where the snapshot and the backup go.
	BackupRoot string
	// Pacing paces the deletes (etcd's --max-request-bytes is filled in).
	Pacing etcdwrite.Pacing
	Now    func() time.Time
}

// PurgeRun is a purge's plan over one read of etcd, and the purge itself.
type PurgeRun struct {
	Plan *repair.Plan
	s    *Settings
	read *Read
	req  PurgeRequest
	// opts are the purge's, once Connect has opened its clients.
	opts *repair.PurgeOptions
}

// PlanPurge reads etcd (and the API server, the second witness) and plans
// the purge req selects. Close releases the read.
func (s *Settings) PlanPurge(ctx context.Context, req PurgeRequest) (*PurgeRun, error) {
	rs, err := s.Open(ctx, ScanReads())
	if err != nil {
		return nil, err
	}
	r := &PurgeRun{s: s, read: rs, req: req}
	r.Plan, err = repair.PlanPurge(ctx, repair.PlanOptions{Store: rs.Store, Selector: req.Selector, Impact: req.Impact,
		Readers: impact.Readers{API: rs.Reader().API, Decrypter: rs.Reader().Decrypter},
		Scan:    func(ctx context.Context) (*etcdscan.Report, error) { return req.Scan(ctx, rs) }})
	if err != nil {
		rs.Close()
		return nil, err
	}
	return r, nil
}

// Connect opens the purge's connection to etcd and, when volumes are to
// be set to Retain first, the API server's client: refused (nothing
// changed) without an API server. It comes before the signal that stops
// the write is listened for, so an interrupt while it dials ends
// regghost. Close closes them.
func (r *PurgeRun) Connect(ctx context.Context) error {
	etcd, cfg, err := r.s.ConnectConfig(ctx)
	if err != nil {
		return err
	}
	o := &repair.PurgeOptions{BackupRoot: r.req.BackupRoot, Client: etcd, ClientConfig: cfg, Now: r.req.Now, Notices: r.s.Notices,
		Decrypt: decrypt.Namespaces(r.read.Decrypter), Pacing: r.req.Pacing}
	o.Pacing.MaxRequestBytes = r.s.Etcd.MaxRequestBytes
	if r.retains() {
		if o.Kube, err = r.retainClient(); err != nil {
			etcd.Close()
			return err
		}
	}
	r.opts = o
	return nil
}

// retains says whether the purge sets volumes to Retain before it deletes.
func (r *PurgeRun) retains() bool {
	return len(r.Plan.Impact.VolumesToRetain()) > 0 && r.req.Impact.RetainVolumes
}

// retainClient is the API server's client that sets volumes to Retain;
// without an API server the purge is refused, nothing changed.
func (r *PurgeRun) retainClient() (kubernetes.Interface, error) {
	if r.read.API == nil {
		return nil, fmt.Errorf("%w: %s sets volumes to Retain through the API server (%s); nothing was changed", repair.ErrRefused, impact.RetainVolumesFlag, r.read.Why)
	}
	kube, err := kubernetes.NewForConfig(r.read.API.Config)
	if err != nil {
		return nil, fmt.Errorf("api server client: %w", err)
	}
	return kube, nil
}

// Purge snapshots etcd, backs up and deletes the plan's keys (setting the
// volumes to retain to Retain first, through the API server) over the
// clients Connect opened; stop (a signal) ends it between transactions.
func (r *PurgeRun) Purge(ctx context.Context, stop <-chan struct{}) (*repair.PurgeResult, error) {
	if r.opts == nil {
		return nil, fmt.Errorf("purge: not connected")
	}
	o := *r.opts
	o.Pacing.Stop = stop
	return repair.Purge(ctx, r.Plan, o)
}

// Close releases the read and the clients Connect opened.
func (r *PurgeRun) Close() {
	if r.opts != nil {
		r.opts.Client.Close()
	}
	r.read.Close()
}
