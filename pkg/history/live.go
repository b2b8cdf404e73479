package history

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/pkg/etcdscan"
)

// progressEvery is how often a live read asks etcd whether its watch has
// caught up with the revision it reads to.
const progressEvery = 200 * time.Millisecond

// FromEtcd reads the history of sel from a live etcd: a watch from o.From
// (else revision 1) replays every revision since, up to etcd's revision when
// the read began, then stops. When those revisions are compacted, etcd says
// where its history begins, and the watch starts there: kube-apiserver
// compacts every 5 minutes by default, so a live history is short. For a
// namespace delete, the objects still in it are read at its revision.
func FromEtcd(ctx context.Context, cli *clientv3.Client, sel Selection, o Options) (*History, error) {
	key, prefix := sel.watchRange()
	opts := []clientv3.OpOption{clientv3.WithCountOnly()}
	if prefix {
		opts = append(opts, clientv3.WithPrefix())
	}
	resp, err := cli.Get(ctx, key, opts...)
	if err != nil {
		return nil, fmt.Errorf("read etcd's revision: %w", err)
	}
	h := &History{Selection: sel, Source: "etcd", From: o.From, Revision: resp.Header.Revision}
	if o.From > h.Revision {
		return nil, fmt.Errorf("--rev %d is ahead of etcd's current revision %d", o.From, h.Revision)
	}
	h.Start = max(o.From, 1)
	b := newBuilder(h, o)
	if sel.Namespace != "" {
		b.aliveAt = func(ctx context.Context, rev int64) ([]Object, error) { return aliveAt(ctx, cli, sel, rev) }
	}
	for h.Start <= h.Revision {
		compacted, err := watchUntil(ctx, cli, key, prefix, h.Start, h.Revision, sel, b)
		if err != nil {
			return nil, err
		}
		if compacted == 0 {
			break
		}
		// The revisions asked for are gone: etcd's history starts at its
		// compacted revision (each key's newest revision at it is kept).
		if compacted <= h.Start {
			return nil, fmt.Errorf("etcd says revision %d is compacted at %d", h.Start, compacted)
		}
		h.CompactRevision, h.Compacted, h.Start = compacted, true, compacted
		*b = *newBuilder(h, b.opts)
		if sel.Namespace != "" {
			b.aliveAt = func(ctx context.Context, rev int64) ([]Object, error) { return aliveAt(ctx, cli, sel, rev) }
		}
		h.Events, h.NamespaceDeletes = nil, nil
		if err := keptAt(ctx, cli, sel, compacted, b); err != nil {
			return nil, err
		}
	}
	if err := b.finish(ctx); err != nil {
		return nil, err
	}
	return h, nil
}

// watchUntil watches from rev and hands every selected event up to end to
// b. It returns etcd's compacted revision when rev is compacted.
func watchUntil(ctx context.Context, cli *clientv3.Client, key string, prefix bool, rev, end int64, sel Selection, b *builder) (int64, error) {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	opts := []clientv3.OpOption{clientv3.WithRev(rev), clientv3.WithPrevKV()}
	if prefix {
		opts = append(opts, clientv3.WithPrefix())
	}
	wch := cli.Watch(wctx, key, opts...)
	tick := time.NewTicker(progressEvery)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			// A progress notification carries etcd's revision once the
			// watch has sent everything before it.
			_ = cli.RequestProgress(wctx)
		case resp, ok := <-wch:
			if !ok {
				if err := ctx.Err(); err != nil {
					return 0, err
				}
				return 0, errors.New("etcd closed the watch")
			}
			if resp.CompactRevision != 0 {
				return resp.CompactRevision, nil
			}
			if err := resp.Err(); err != nil {
				return 0, fmt.Errorf("watch %s from revision %d: %w", key, rev, err)
			}
			for _, ev := range resp.Events {
				r := ev.Kv.ModRevision
				if r > end {
					return 0, nil
				}
				if !sel.Match(ev.Kv.Key) {
					continue
				}
				rr := raw{rev: r, kv: ev.Kv, prev: ev.PrevKv}
				if ev.Type == mvccpb.DELETE {
					rr.tombstone = true
				}
				if err := b.add(ctx, rr); err != nil {
					return 0, err
				}
			}
			if len(resp.Events) > 0 && resp.Events[len(resp.Events)-1].Kv.ModRevision >= end {
				return 0, nil
			}
			if resp.IsProgressNotify() && resp.Header.Revision >= end {
				return 0, nil
			}
		}
	}
}

// aliveAt reads the keys of sel's namespace alive at rev (keys only), the
// namespace's own key left out.
func aliveAt(ctx context.Context, cli *clientv3.Client, sel Selection, rev int64) ([]Object, error) {
	resp, err := cli.Get(ctx, sel.Registry, clientv3.WithPrefix(), clientv3.WithRev(rev), clientv3.WithKeysOnly())
	if err != nil {
		return nil, fmt.Errorf("read the keys at revision %d: %w", rev, err)
	}
	var out []Object
	for _, kv := range resp.Kvs {
		k := string(kv.Key)
		if k == sel.NamespaceKey() || !sel.Match(kv.Key) {
			continue
		}
		o := Object{Key: k, CreateRevision: kv.CreateRevision, ModRevision: kv.ModRevision}
		if pk, err := etcdscan.ParseKey(sel.Registry, k); err == nil {
			o.Resource, o.Name = pk.Prefix, pk.Name
		}
		out = append(out, o)
	}
	return out, nil
}

// keptAt hands b the revisions a compaction at rev kept of the selected
// keys: each key's newest revision before it (a db file holds them too).
func keptAt(ctx context.Context, cli *clientv3.Client, sel Selection, rev int64, b *builder) error {
	key, prefix := sel.watchRange()
	opts := []clientv3.OpOption{clientv3.WithRev(rev), clientv3.WithKeysOnly()}
	if prefix {
		opts = append(opts, clientv3.WithPrefix())
	}
	resp, err := cli.Get(ctx, key, opts...)
	if err != nil {
		return fmt.Errorf("read the keys kept at revision %d: %w", rev, err)
	}
	var kept []*mvccpb.KeyValue
	for _, kv := range resp.Kvs {
		if kv.ModRevision >= rev || !sel.Match(kv.Key) {
			continue // the watch from rev sends it
		}
		r, err := cli.Get(ctx, string(kv.Key), clientv3.WithRev(rev))
		if err != nil {
			return fmt.Errorf("read %s at revision %d: %w", kv.Key, rev, err)
		}
		if len(r.Kvs) == 1 {
			kept = append(kept, r.Kvs[0])
		}
	}
	slices.SortFunc(kept, func(a, b *mvccpb.KeyValue) int { return cmp.Compare(a.ModRevision, b.ModRevision) })
	for _, kv := range kept {
		if err := b.add(ctx, raw{rev: kv.ModRevision, kv: kv}); err != nil {
			return err
		}
	}
	return nil
}
