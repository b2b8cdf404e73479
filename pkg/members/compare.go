package members

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/regghost/regghost/pkg/decode"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/pace"
	"github.com/regghost/regghost/pkg/plural"
)

// recheckBatch is how many differing keys of a comparison of current
// values are read again at once.
const recheckBatch = 500

// compareKeys reads every member's whole keyspace on its own and merges
// them key by key. In ModeRevision each is read at rev; in ModeCurrent
// each at its own current revision, and a key that differs is read again
// on every member (up to RecheckLimit keys): a key that then agrees was a
// write in flight.
func (r *run) compareKeys(ctx context.Context, mode string, rev int64) (*tally, KeyComparison, error) {
	kc := KeyComparison{Mode: mode, Groups: []Group{}, Keys: []KeyDiff{}}
	names := r.names()
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if mode == ModeRevision {
		// A member that fell behind since it was settled (applying slower
		// than the others write) has not reached the shared revision: it
		// is behind, never wrong, and left out as settle leaves it.
		r.leaveBehindAt(ctx, rev)
		names = r.names()
	}
	stores := make([]*etcdscan.EtcdStore, len(r.conns))
	// Each member's read is paced by its own latency (pkg/pace), up to
	// Reads.MaxKeysPerSecond: every member is read at once, and a fixed
	// pace that suits one machine costs another's writers.
	pacers := make([]*pace.Pacer, len(r.conns))
	for i, c := range r.conns {
		var st *etcdscan.EtcdStore
		var err error
		if mode == ModeRevision {
			st, err = etcdscan.NewEtcdStoreAt(ctx, c.cli, r.opts.Reads.PageSize, rev)
		} else {
			st, err = etcdscan.NewEtcdStore(ctx, c.cli, r.opts.Reads.PageSize)
		}
		if err != nil {
			return nil, kc, fmt.Errorf("open %s's keyspace: %w", names[i], err)
		}
		if !r.opts.Reads.Stream {
			st.DisableStreaming()
		}
		if top := r.opts.Reads.MaxKeysPerSecond; top > 0 {
			if pacers[i], err = pace.New(c.probe, pace.Config{Max: float64(top)}); err != nil {
				return nil, kc, fmt.Errorf("pace %s's read: %w", names[i], err)
			}
			st.SetPacer(pacers[i])
		}
		stores[i] = st
	}
	if mode == ModeRevision {
		kc.Revision = rev
		r.opts.progress("reading the keyspace of %s at revision %d, serializably, each on its own", names, rev)
	} else {
		r.opts.progress("reading the current keyspace of %s, serializably, each on its own", names)
	}
	t := newTally(mode, names, r.opts.Registry, r.opts.maxKeys())
	var wg sync.WaitGroup
	curs := make([]*cursor, len(stores))
	for i, st := range stores {
		curs[i] = read(ctx, names[i], st, pacers[i], &wg)
	}
	var pending []pendingKey
	rechecked := 0
	flush := func() error {
		if len(pending) == 0 {
			return nil
		}
		err := r.recheck(ctx, pending, t, &kc)
		rechecked += len(pending)
		pending = pending[:0]
		return err
	}
	distinct, err := merge(curs, mode, func(key string, recs []*record) error {
		if mode != ModeCurrent {
			t.add(key, recs)
			return nil
		}
		if rechecked+len(pending) >= RecheckLimit {
			kc.NotRechecked++
			t.add(key, recs)
			return nil
		}
		pending = append(pending, pendingKey{key, recs})
		if len(pending) == recheckBatch {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	cancel()
	wg.Wait()
	if err != nil {
		if errors.Is(err, rpctypes.ErrCompacted) {
			return nil, kc, fmt.Errorf("revision %d was compacted while the keyspaces were read (kube-apiserver compacts every 5 minutes): "+
				"run again, or compare the current values: %w", rev, err)
		}
		if slowed := slowedDown(names, curs, statsOf(pacers)); slowed != "" && errors.Is(err, context.DeadlineExceeded) {
			return nil, kc, fmt.Errorf("the keyspaces were not read in time (%s): give the command more time, "+
				"or run it when the members are less busy: %w", slowed, err)
		}
		return nil, kc, err
	}
	kc.Distinct = distinct
	for i, st := range stores {
		kc.Reads = append(kc.Reads, MemberRead{Member: names[i], Revision: st.Revision(), Keys: curs[i].keys})
		if pacers[i] != nil {
			r.opts.progress("%s", paced(names[i], curs[i].keys, curs[i].took, pacers[i].Stats()))
		}
	}
	r.decodeListed(parent, t, stores)
	kc.Differ, kc.Unlisted, kc.Groups, kc.Keys = t.differ, t.unlisted, t.result(), t.keys
	return t, kc, nil
}

// pendingKey is a key whose copies differed when first read, to be read
// again.
type pendingKey struct {
	key  string
	recs []*record
}

// recheck reads the pending keys again on every member, at once, and
// tallies those that still differ.
func (r *run) recheck(ctx context.Context, pending []pendingKey, t *tally, kc *KeyComparison) error {
	now := make([][]*record, len(pending))
	for i := range now {
		now[i] = make([]*record, len(r.conns))
	}
	errs := make([]error, len(r.conns))
	var wg sync.WaitGroup
	for m, c := range r.conns {
		wg.Go(func() {
			for i, p := range pending {
				resp, err := c.cli.Get(ctx, p.key)
				if err != nil {
					errs[m] = fmt.Errorf("read %s again on %s: %w", p.key, r.rep.Members[c.m].Name, err)
					return
				}
				if len(resp.Kvs) > 0 {
					rec := recordOf(resp.Kvs[0])
					now[i][m] = &rec
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for i, p := range pending {
		agree := true
		for _, rec := range now[i] {
			agree = agree && same(rec, now[i][0], ModeCurrent)
		}
		if agree {
			kc.Settled++
			continue
		}
		t.add(p.key, now[i])
	}
	return nil
}

// decodeListed names the listed keys' objects: kind and API version from
// one copy's value, read again at the revision compared: the majority's
// copy where there is one, else the first copy that decodes.
func (r *run) decodeListed(ctx context.Context, t *tally, stores []*etcdscan.EtcdStore) {
	for i := range t.keys {
		d := &t.keys[i]
		if d.Resource == "" || t.sources[i] < 0 {
			continue
		}
		tries := []int{t.sources[i]}
		if len(d.Majority) == 0 {
			for m, s := range d.States {
				if s.Present && m != t.sources[i] {
					tries = append(tries, m)
				}
			}
		}
		for _, src := range tries {
			if r.decodeFrom(ctx, t.mode, d, stores[src], r.conns[src]) {
				break
			}
		}
	}
}

// decodeFrom decodes d's copy on one member; false when it cannot.
func (r *run) decodeFrom(ctx context.Context, mode string, d *KeyDiff, store *etcdscan.EtcdStore, c conn) bool {
	var value []byte
	if mode == ModeRevision {
		got, err := store.Get(ctx, d.Key)
		if err != nil || got == nil {
			d.DecodeError = readError(err)
			return false
		}
		value = got.Value
	} else {
		resp, err := c.cli.Get(ctx, d.Key)
		if err != nil || len(resp.Kvs) == 0 {
			d.DecodeError = readError(err)
			return false
		}
		value = resp.Kvs[0].Value
	}
	obj, err := decode.Meta(value)
	switch {
	case obj != nil && obj.Encryption != nil:
		d.Encrypted, d.DecodeError = true, ""
	case err != nil:
		d.DecodeError = firstLine(err)
		return false
	default:
		d.APIVersion, d.Kind, d.DecodeError = obj.APIVersion, obj.Kind, ""
	}
	return true
}

// paced says how one member's read was paced: what its probe answered
// idle and at worst, and the paces the pacer set. Its shape is the same
// whatever the pacer did (a guide quotes it; only its numbers vary).
func paced(member string, keys int64, took time.Duration, s pace.Stats) string {
	return fmt.Sprintf("%s: %s read in %dms; its probe answered in %s idle, %s at worst; paced between %.0f and %.0f keys a second, backed off %s",
		member, plural.Of(keys, "key"), took.Round(10*time.Millisecond).Milliseconds(), millis(s.Idle), millis(max(s.Worst, s.Idle)),
		s.Lowest, s.Highest, plural.Of(s.BackedOff, "time"))
}

// millis is d in milliseconds, two decimals: one unit whatever d is.
func millis(d time.Duration) string {
	return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
}

// statsOf are the pacers' stats (nil for a read not paced).
func statsOf(pacers []*pace.Pacer) []*pace.Stats {
	out := make([]*pace.Stats, len(pacers))
	for i, p := range pacers {
		if p != nil {
			s := p.Stats()
			out[i] = &s
		}
	}
	return out
}

// slowedDown says which members' reads their pacers slowed down because
// the members answered slowly, and how far each read got ("" none).
func slowedDown(names []string, curs []*cursor, stats []*pace.Stats) string {
	var parts []string
	for i, s := range stats {
		if s != nil && s.BackedOff > 0 {
			parts = append(parts, fmt.Sprintf("%s answered its probe in %s at worst against %s idle, and was read down to %.0f keys a second, %s in",
				names[i], s.Worst.Round(10*time.Microsecond), s.Idle.Round(10*time.Microsecond), s.Lowest, plural.Of(curs[i].keys, "key")))
		}
	}
	return strings.Join(parts, "; ")
}

func readError(err error) string {
	if err == nil {
		return "the key is gone since it was compared"
	}
	return "read again: " + firstLine(err)
}
