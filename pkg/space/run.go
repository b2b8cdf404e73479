package space

import (
	"context"
	"errors"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/pkg/dbfile"
	"github.com/regghost/regghost/pkg/etcdscan"
)

// ScanFunc runs the scan, with the caller's options, over store: the
// account counts the values it reads.
type ScanFunc func(ctx context.Context, store etcdscan.Store) (*etcdscan.Report, error)

// LiveOptions configure FromEtcd.
type LiveOptions struct {
	// Prefix is the registry prefix, ending in "/".
	Prefix string
	// Top is how many keys the key lists keep (DefaultTop when 0).
	Top     int
	Members MemberOptions
}

// errNotCounted refuses a scan that did not walk the whole prefix.
var errNotCounted = errors.New("the scan did not read the whole keyspace under the prefix; nothing was counted")

// FromEtcd accounts a live etcd: its compacted revision, the values a scan
// reads over store (pinned at one revision) with their history bounded per
// key, the keys outside the prefix, the ghosts the scan finds, and every
// member's size, quota and alarms.
func FromEtcd(ctx context.Context, cli *clientv3.Client, store etcdscan.Store, scan ScanFunc, o LiveOptions) (*Report, error) {
	var notes []string
	compact, err := etcdscan.CompactedRevisionAt(ctx, cli, store.Revision())
	if err != nil {
		notes = append(notes, fmt.Sprintf("etcd's compacted revision could not be found (%s): each key's history is bounded as if never compacted", firstLine(err)))
	}
	a := NewAccount(Options{Prefix: o.Prefix, CompactRevision: compact, Top: o.Top})
	if err := a.account(ctx, store, scan, nil); err != nil {
		return nil, err
	}
	r := a.Report()
	r.Source, r.Revision = "etcd", store.Revision()
	r.Members, r.Alarms, r.Notes = Members(ctx, cli, o.Members)
	if r.NotEtcd = NotEtcd(r.Members); r.NotEtcd {
		// kine says alarms are not supported: that is no news.
		r.Notes = nil
	}
	for _, m := range r.Members {
		r.Estimates.Defragmentation = max(r.Estimates.Defragmentation, m.Fragmented)
	}
	r.Notes = append(notes, r.Notes...)
	return r, nil
}

// FromFile accounts a db file: the values a scan reads, and at the same
// time one walk of every revision the file holds (exact history), the keys
// outside the prefix, the ghosts the scan finds and the file's pages.
func FromFile(ctx context.Context, st *dbfile.Store, scan ScanFunc, o Options) (*Report, error) {
	o.File = true
	a := NewAccount(o)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	walked := make(chan error, 1)
	go func() { walked <- a.WalkFile(wctx, st.File(), st.Len()) }()
	// The ghosts are sized once the walk has counted their history.
	waited := false
	walk := func() error {
		waited = true
		if err := <-walked; err != nil {
			return fmt.Errorf("walk the revisions of %s: %w", st.Info().Path, err)
		}
		return nil
	}
	err := a.account(ctx, st, scan, walk)
	if !waited {
		cancel()
		<-walked
	}
	if err != nil {
		return nil, err
	}
	pages, err := st.File().Pages()
	if err != nil {
		return nil, err
	}
	r := a.Report()
	info := st.Info()
	r.Source, r.File, r.Revision = info.Path, &info, st.Revision()
	r.Pages = &Pages{PageSize: pages.PageSize, FileSize: pages.Size, InUse: pages.InUse, Fragmented: pages.Size - pages.InUse}
	r.Estimates.Defragmentation = r.Pages.Fragmented
	return r, nil
}

// account runs the scan over the wrapped store, counts the keys outside
// the prefix, waits for before (when set), and sizes the scan's findings.
func (a *Account) account(ctx context.Context, store etcdscan.Store, scan ScanFunc, before func() error) error {
	rep, err := scan(ctx, a.Wrap(store))
	if err != nil {
		return err
	}
	defer rep.Close()
	if !a.counted() {
		return errNotCounted
	}
	if err := a.CountOutside(ctx, store); err != nil {
		return fmt.Errorf("read the keys outside %s: %w", a.o.Prefix, err)
	}
	if before != nil {
		if err := before(); err != nil {
			return err
		}
	}
	return a.Ghosts(rep)
}
