package etcdscan

import (
	"context"
	"sync"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/regghost/regghost/pkg/decode"
)

// decoded is a key-value with its value decoded ahead of its visit.
type decoded struct {
	kv  *mvccpb.KeyValue
	obj *decode.Object
	err error
}

// pipelineBatch is how many keys a decoder takes at a time.
const pipelineBatch = 256

// rangeDecoded walks [start, end) like Store.Range, with the values decoded
// by workers goroutines ahead of the visits, which stay in key order on one
// goroutine. Offline, reading a db file, there is no etcd to leave a core
// to: decoding on the other cores takes it off the visit's path.
func (s *scan) rangeDecoded(ctx context.Context, start, end string, workers int, tick func()) error {
	type batch struct {
		items []decoded
		ready chan struct{}
		fault error // a fault reading the batch's values
	}
	jobs := make(chan *batch, workers*2)
	order := make(chan *batch, workers*8)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range jobs {
				b.fault = s.guarded(func() {
					for i := range b.items {
						b.items[i].obj, b.items[i].err = decode.Meta(b.items[i].kv.Value)
					}
				})
				close(b.ready)
			}
		}()
	}
	visited := make(chan error, 1)
	go func() {
		var err error
		for b := range order {
			<-b.ready
			if err == nil {
				err = b.fault
			}
			if err == nil {
				if fault := s.guarded(func() {
					for i := 0; err == nil && i < len(b.items); i++ {
						err = s.visitDecoded(ctx, &b.items[i])
					}
				}); fault != nil {
					err = fault
				}
			}
		}
		visited <- err
	}()
	cur := &batch{ready: make(chan struct{})}
	send := func() {
		jobs <- cur
		order <- cur
		cur = &batch{ready: make(chan struct{}), items: make([]decoded, 0, pipelineBatch)}
	}
	err := s.store.Range(ctx, start, end, false, func(kv *mvccpb.KeyValue) error {
		tick()
		cur.items = append(cur.items, decoded{kv: kv})
		if len(cur.items) == pipelineBatch {
			send()
		}
		return nil
	})
	if len(cur.items) > 0 {
		send()
	}
	close(jobs)
	close(order)
	verr := <-visited
	wg.Wait()
	if err != nil {
		return err
	}
	return verr
}

// faultGuard is a Store whose key-values alias memory that can fault: a db
// file's memory map (dbfile.Store), read on goroutines other than the one
// that called Range.
type faultGuard interface {
	Guard(err *error) func()
}

// Wrapper is a Store that wraps another to see its pass (space's account,
// the leases tally): what the store underneath can do, its fault guard, is
// found through Unwrap.
type Wrapper interface {
	Unwrap() Store
}

// guardOf is the fault guard of store or of a store it wraps.
func guardOf(store any) (faultGuard, bool) {
	for {
		if g, ok := store.(faultGuard); ok {
			return g, true
		}
		w, ok := store.(Wrapper)
		if !ok {
			return nil, false
		}
		store = w.Unwrap()
	}
}

// guarded runs fn, which reads key-values the store handed out, on the
// calling goroutine; where the store's memory can fault, a fault is
// returned as the store's error (naming the file and page), never a crash.
// The goroutine goes on: the pipeline's channels are still drained.
func (s *scan) guarded(fn func()) (err error) {
	g, ok := guardOf(s.store)
	if !ok {
		fn()
		return nil
	}
	defer g.Guard(&err)()
	fn()
	return nil
}
