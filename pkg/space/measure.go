package space

import (
	"context"
	"crypto/tls"
	"fmt"

	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/dbfile"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/leases"
	"github.com/regghost/regghost/pkg/session"
)

// MeasureOptions say how Measure reads.
type MeasureOptions struct {
	Reads session.Reads
	// Top is how many keys the ranked key lists keep (-1: all).
	Top int
	// Quota fills the quota of members that do not say theirs.
	Quota int64
	// Scan is the scan Measure runs over the keyspace it counts (the
	// caller's, with its progress and spill settings).
	Scan func(ctx context.Context, rs *session.Read) (*etcdscan.Report, error)
	// BackupRoot is where regghost's backups are: what they hold is
	// counted beside etcd's own bytes ("" leaves it out).
	BackupRoot string
	// Leases, if set, audits etcd's leases from the same pass: the report
	// says what the classes that hold keys hold (Report.Leases).
	Leases *leases.Options
}

// leasesOver is scan with the leases audit observing its pass (scan as it
// is when o asks no audit), and what says the classes' holdings after it.
func (o MeasureOptions) leasesOver(ctx context.Context, src leases.Source, revision int64, scan ScanFunc) (ScanFunc, func() []leases.Held) {
	if o.Leases == nil {
		return scan, func() []leases.Held { return nil }
	}
	t := leases.NewTally(o.Leases.From(ctx, src), revision)
	return func(ctx context.Context, store etcdscan.Store) (*etcdscan.Report, error) {
			return scan(ctx, t.Wrap(store))
		}, func() []leases.Held {
			if !t.Observed() {
				return nil
			}
			return t.Finish(ctx).Holding()
		}
}

// Measure opens what s reaches (a db file, or the live etcd and its
// members) and accounts for its bytes (FromFile, FromEtcd).
func Measure(ctx context.Context, s *session.Settings, o MeasureOptions) (*Report, error) {
	if s.DB != "" {
		rs, err := s.Open(ctx, o.Reads)
		if err != nil {
			return nil, err
		}
		defer rs.Close()
		st, ok := rs.Store.(*dbfile.Store)
		if !ok {
			return nil, fmt.Errorf("--db %s did not open as a db file", s.DB)
		}
		scan, held := o.leasesOver(ctx, leases.Source{Decrypter: rs.Decrypter, DB: true}, st.Revision(), scanOver(rs, o.Scan))
		r, err := FromFile(ctx, st, scan, Options{Prefix: s.Prefix, Top: o.Top})
		if err != nil {
			return nil, err
		}
		r.Leases = held()
		return r, nil
	}
	cli, err := s.Connect(ctx)
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	store, err := etcdscan.NewEtcdStore(ctx, cli, o.Reads.PageSize)
	if err != nil {
		return nil, err
	}
	if !o.Reads.Stream {
		store.DisableStreaming()
	}
	store.SetMaxKeysPerSecond(o.Reads.MaxKeysPerSecond)
	dec, err := s.Decrypter(ctx)
	if err != nil {
		return nil, err
	}
	view, why := s.API()
	rs := session.Wrap(s.Prefix, store, dec, view, why)
	scan, held := o.leasesOver(ctx, leases.Source{Client: cli, API: view, Decrypter: dec}, store.Revision(), scanOver(rs, o.Scan))
	r, err := FromEtcd(ctx, cli, store, scan, LiveOptions{Prefix: s.Prefix, Top: o.Top, Members: MembersOf(s, o.Quota)})
	if err != nil {
		return nil, err
	}
	r.Leases = held()
	if o.BackupRoot == "" {
		return r, nil
	}
	h, err := backup.HoldingsOf(o.BackupRoot)
	if err != nil {
		r.Notes = append(r.Notes, "what the backups under "+o.BackupRoot+" hold could not be read: "+err.Error())
		return r, nil
	}
	r.Backups = &h
	return r, nil
}

// scanOver runs scan over the store the account wraps.
func scanOver(rs *session.Read, scan func(ctx context.Context, rs *session.Read) (*etcdscan.Report, error)) ScanFunc {
	return func(ctx context.Context, store etcdscan.Store) (*etcdscan.Report, error) {
		r := *rs
		r.Store = store
		return scan(ctx, &r)
	}
}

// MembersOf says how space and serve read etcd's members: each within the
// dial timeout, their /metrics (the quota of etcd before 3.6) with the etcd
// client's TLS files, and quota for those that say none.
func MembersOf(s *session.Settings, quota int64) MemberOptions {
	// The TLS files may come from the node's configuration.
	s.Discover()
	var tlsConfig *tls.Config
	if cfg, err := s.Etcd.ClientConfig(); err == nil {
		tlsConfig = cfg.TLS
	}
	return MemberOptions{Timeout: s.Etcd.DialTimeout, Metrics: MetricsReader(tlsConfig), Quota: quota}
}
