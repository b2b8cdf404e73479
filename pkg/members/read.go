package members

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/pace"
)

// record is what the comparison keeps of one key on one member: a hash of
// its value, never the value.
type record struct {
	key                           string
	sum                           [sha256.Size]byte
	size                          int
	create, mod, version, leaseID int64
}

func recordOf(kv *mvccpb.KeyValue) record {
	return record{key: string(kv.Key), sum: sha256.Sum256(kv.Value), size: len(kv.Value),
		create: kv.CreateRevision, mod: kv.ModRevision, version: kv.Version, leaseID: kv.Lease}
}

// same reports whether a and b are the same copy of a key: in ModeCurrent
// the same value, else also the same revisions, version and lease.
func same(a, b *record, mode string) bool {
	switch {
	case a == nil || b == nil:
		return a == b
	case mode == ModeCurrent:
		return a.sum == b.sum
	}
	return a.sum == b.sum && a.create == b.create && a.mod == b.mod && a.version == b.version && a.leaseID == b.leaseID
}

// batchSize is how many records a reader hands over at once.
const batchSize = 256

// cursor reads one member's whole keyspace in key order, ahead of the
// merge by at most a few batches: memory holds those, not the keyspace.
type cursor struct {
	ch    chan []record
	batch []record
	pos   int
	// err is the reader's error, set before ch is closed.
	err error
	// keys counts the records handed over.
	keys int64
	// took is how long the reader read, set before ch is closed.
	took time.Duration
}

// keyspaceStart and keyspaceEnd make a range of every key: "\x00" as a
// range end means every key from the start on.
const keyspaceStart, keyspaceEnd = "\x00", "\x00"

// read starts reading store's whole keyspace, member's; wg is done when
// the reader has stopped (ctx cancelled, or the end). p, when set, is the
// store's pacer: it runs (probes the member) for as long as the read.
func read(ctx context.Context, member string, store etcdscan.Store, p *pace.Pacer, wg *sync.WaitGroup) *cursor {
	c := &cursor{ch: make(chan []record, 4)}
	wg.Go(func() {
		start := time.Now()
		defer close(c.ch)
		defer func() { c.took = time.Since(start) }()
		ctx, stop := context.WithCancel(ctx)
		defer stop()
		if p != nil {
			// Its error (no idle probe answered) is the read's, from Wait.
			wg.Go(func() { _ = p.Run(ctx) })
		}
		batch := make([]record, 0, batchSize)
		send := func() error {
			select {
			case c.ch <- batch:
				batch = make([]record, 0, batchSize)
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		err := store.Range(ctx, keyspaceStart, keyspaceEnd, false, func(kv *mvccpb.KeyValue) error {
			batch = append(batch, recordOf(kv))
			if len(batch) == batchSize {
				return send()
			}
			return nil
		})
		if err == nil && len(batch) > 0 {
			err = send()
		}
		if err != nil {
			err = fmt.Errorf("read %s's keyspace: %w", member, err)
		}
		c.err = err
	})
	return c
}

// head is the next record, nil at the end.
func (c *cursor) head() (*record, error) {
	for c.pos >= len(c.batch) {
		b, ok := <-c.ch
		if !ok {
			c.batch, c.pos = nil, 0
			return nil, c.err
		}
		c.batch, c.pos = b, 0
	}
	return &c.batch[c.pos], nil
}

// advance moves past the head.
func (c *cursor) advance() {
	c.pos++
	c.keys++
}

// merge walks the cursors' keys in order, all members at once, and calls
// differ with each key whose copies are not all the same (recs[i] is
// member i's copy, nil when it lacks the key; fn gets copies it may keep).
// It returns how many distinct keys it saw.
func merge(curs []*cursor, mode string, differ func(key string, recs []*record) error) (int64, error) {
	heads := make([]*record, len(curs))
	recs := make([]*record, len(curs))
	var distinct int64
	for {
		var low *string
		for i, c := range curs {
			h, err := c.head()
			if err != nil {
				return distinct, err
			}
			heads[i] = h
			if h != nil && (low == nil || h.key < *low) {
				low = &h.key
			}
		}
		if low == nil {
			return distinct, nil
		}
		key := *low
		agree := true
		for i, h := range heads {
			recs[i] = nil
			if h != nil && h.key == key {
				recs[i] = h
			}
			if !same(recs[i], recs[0], mode) {
				agree = false
			}
		}
		distinct++
		if !agree {
			kept := make([]*record, len(recs))
			for i, r := range recs {
				if r != nil {
					cp := *r
					kept[i] = &cp
				}
			}
			if err := differ(key, kept); err != nil {
				return distinct, err
			}
		}
		for i, r := range recs {
			if r != nil {
				curs[i].advance()
			}
		}
	}
}
