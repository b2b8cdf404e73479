package recovery

import (
	"context"
	"fmt"
	"time"

	"github.com/regghost/regghost/pkg/apiview"
	"github.com/regghost/regghost/pkg/decrypt"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/notice"
	"github.com/regghost/regghost/pkg/protect"
	"github.com/regghost/regghost/pkg/session"
	"github.com/regghost/regghost/pkg/snapshot"
)

// Request is what a recovery is asked: where from, which objects, and the
// accepts that let a verdict through.
type Request struct {
	// Snapshot is a snapshot file (etcd's, k3s's, or regghost's logical
	// snapshot of kine); else Rev is an older revision of the live etcd.
	Snapshot string
	Rev      int64
	// SourceEncryptionConfig decrypts the source's values besides the
	// cluster's own config.
	SourceEncryptionConfig string
	Selection              Selection
	Accept                 map[ImpactKind]bool
	IntoRecreated          bool
	// OtherCluster and OtherClusterGrants let a source of another cluster,
	// and its grants, through (see protect.Job).
	OtherCluster, OtherClusterGrants bool
	// BackupRoot is where the recovery's backup directory is made.
	BackupRoot string
	Notices    notice.Func
}

// Recovery is a judged recovery: Objects carry their verdicts, ready to be
// printed, turned into manifests or written. Close releases what it holds.
type Recovery struct {
	Objects []*Object
	// From names the source ("snapshot s.db (revision 812)").
	From  string
	run   RunOptions
	view  *apiview.View
	close []func()
}

// Prepare opens the source, selects the objects, compares the source's
// cluster with this one (a foreign source stops here, before anything is
// judged or printed) and judges every object against the live cluster.
func Prepare(ctx context.Context, s *session.Settings, req Request) (*Recovery, error) {
	r := &Recovery{}
	if err := r.prepare(ctx, s, req); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

func (r *Recovery) prepare(ctx context.Context, s *session.Settings, req Request) error {
	cluster, err := s.Decrypter(ctx)
	if err != nil {
		return err
	}
	var decs Decoders
	if cluster != nil {
		decs = append(decs, cluster)
	}
	if req.SourceEncryptionConfig != "" {
		d, err := decrypt.Load(ctx, req.SourceEncryptionConfig)
		if err != nil {
			return err
		}
		decs = append(decs, d)
	}
	src, err := r.openSource(ctx, s, req)
	if err != nil {
		return err
	}
	if r.Objects, err = Select(ctx, src, req.Selection, decs); err != nil {
		return err
	}
	if len(r.Objects) == 0 {
		return fmt.Errorf("nothing in %s matches the selection; nothing was changed", r.From)
	}
	srcID, err := SourceIdentity(ctx, src, s.Prefix, decs)
	if err != nil {
		return err
	}
	cli, err := s.Connect(ctx)
	if err != nil {
		return err
	}
	r.close = append(r.close, func() { cli.Close() })
	r.run = RunOptions{Client: cli, From: r.From, Source: srcID, OtherCluster: req.OtherCluster, OtherClusterGrants: req.OtherClusterGrants,
		BackupRoot: req.BackupRoot, Notices: req.Notices, Decrypt: decrypt.Namespaces(cluster)}
	keys := make([]string, len(r.Objects))
	for i, obj := range r.Objects {
		keys[i] = obj.Key
	}
	if _, err := protect.Check(ctx, protect.Job{Client: cli, Prefix: s.Prefix, Decrypt: r.run.Decrypt, Source: &srcID, SourceKeys: keys,
		OtherCluster: req.OtherCluster, OtherClusterGrants: req.OtherClusterGrants}); err != nil {
		return err
	}
	live, err := etcdscan.NewEtcdStore(ctx, cli, etcdscan.DefaultPageSize)
	if err != nil {
		return err
	}
	reader, err := s.ContentReader(ctx)
	if err != nil {
		return err
	}
	r.view, _ = s.API()
	types, err := LoadTypes(ctx, live, s.Prefix, r.view, cluster)
	if err != nil {
		return err
	}
	reader.Types = types
	r.run.Judge = Options{Registry: s.Prefix, Live: live, Reader: reader, Cluster: cluster, Types: types, Accept: req.Accept,
		Source: src, IntoRecreated: req.IntoRecreated, Decoders: decs}
	if err := Judge(ctx, r.Objects, r.run.Judge); err != nil {
		return err
	}
	return nil
}

// openSource opens the snapshot file, or the live etcd at Rev.
func (r *Recovery) openSource(ctx context.Context, s *session.Settings, req Request) (Source, error) {
	switch {
	case req.Snapshot != "" && snapshot.IsLogical(req.Snapshot):
		info, entries, err := snapshot.ReadLogical(req.Snapshot)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", req.Snapshot, err)
		}
		r.From = fmt.Sprintf("logical snapshot %s (revision %d)", req.Snapshot, info.Revision)
		return NewEntriesSource(info.Revision, entries), nil
	case req.Snapshot != "":
		st, err := s.OpenDB(req.Snapshot)
		if err != nil {
			return nil, err
		}
		r.close = append(r.close, func() { st.Close() })
		r.From = fmt.Sprintf("snapshot %s (revision %d)", req.Snapshot, st.Revision())
		return st, nil
	}
	cli, err := s.Connect(ctx)
	if err != nil {
		return nil, err
	}
	r.close = append(r.close, func() { cli.Close() })
	st, err := etcdscan.NewEtcdStoreAt(ctx, cli, etcdscan.DefaultPageSize, req.Rev)
	if err != nil {
		return nil, err
	}
	r.From = fmt.Sprintf("etcd at revision %d", req.Rev)
	return st, nil
}

// Write writes the objects judged Recover through the protected write
// (Run), waiting up to servedWait for each recovered CRD to be served
// before its custom resources when the API server is there.
func (r *Recovery) Write(ctx context.Context, pacing etcdwrite.Pacing, servedWait time.Duration) (*protect.Outcome, error) {
	ro := r.run
	ro.Pacing = pacing
	if view := r.view; view != nil {
		ro.Served = func(ctx context.Context, crd *Object) error { return WaitServed(ctx, view, crd, servedWait) }
	}
	return Run(ctx, r.Objects, ro)
}

// Close releases the source and the connections.
func (r *Recovery) Close() {
	for i := len(r.close) - 1; i >= 0; i-- {
		r.close[i]()
	}
	r.close = nil
}
