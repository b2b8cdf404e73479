package etcdscan

import (
	"context"
	"sync"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

// Pass is what an observer of a reader's pass saw: space's account and the
// leases tally count the keys of the scan's one read of the whole prefix,
// values and all, as the scan gets them, with no second read of etcd.
type Pass struct {
	prefix string
	see    func(context.Context, *mvccpb.KeyValue)
	mu     sync.Mutex
	seen   bool
}

// ObservePass returns store with see called, on the read's context, on
// each key of the first read of the whole prefix with values, before the
// reader gets it; every other read (a part of the prefix, the keys alone)
// goes by untouched. The store returned keeps store's Counter and unwraps
// to it (Wrapper).
func ObservePass(store Store, prefix string, see func(context.Context, *mvccpb.KeyValue)) (Store, *Pass) {
	p := &Pass{prefix: prefix, see: see}
	if c, ok := store.(Counter); ok {
		return &observedCounter{observed{store, p}, c}, p
	}
	return &observed{store, p}, p
}

// Seen says whether the whole prefix was read through the store: without
// it the observer saw nothing, and what it counted is no keyspace's.
func (p *Pass) Seen() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen
}

// observed is a store whose pass over the whole prefix is observed.
type observed struct {
	Store
	p *Pass
}

// Range implements Store.
func (s *observed) Range(ctx context.Context, start, end string, keysOnly bool, fn func(*mvccpb.KeyValue) error) error {
	p := s.p
	p.mu.Lock()
	whole := !keysOnly && !p.seen && start == p.prefix && end == PrefixEnd(p.prefix)
	if whole {
		p.seen = true
	}
	p.mu.Unlock()
	if !whole {
		return s.Store.Range(ctx, start, end, keysOnly, fn)
	}
	return s.Store.Range(ctx, start, end, false, func(kv *mvccpb.KeyValue) error {
		p.see(ctx, kv)
		return fn(kv)
	})
}

// Unwrap implements Wrapper: a db file's fault guard is found through it.
func (s *observed) Unwrap() Store { return s.Store }

// observedCounter keeps a store's Counter (the scan's progress line).
type observedCounter struct {
	observed
	Counter
}

// Range implements Store.
func (s *observedCounter) Range(ctx context.Context, start, end string, keysOnly bool, fn func(*mvccpb.KeyValue) error) error {
	return s.observed.Range(ctx, start, end, keysOnly, fn)
}
