package leases

import (
	"context"
	"fmt"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/plural"
)

// Budget is the most time a removal can take at its slowest, known
// before its audit reads anything: the audit of every key under the
// registry at RemovalFloor, then the deletes of at most MaxRemoval
// events, and their read-back, at p (Removal.Duration).
type Budget struct {
	Keys, Events int64
	Audit        time.Duration
	Deletes      time.Duration
	pacing       etcdwrite.Pacing
}

// Total is the audit's time and the deletes'.
func (b Budget) Total() time.Duration { return b.Audit + b.Deletes }

// RemovalBudget counts the keys under registry and under its events/
// (count-only reads of etcd's index, serializable: no value is read) and
// says how long their removal takes at its slowest.
func RemovalBudget(ctx context.Context, cli *clientv3.Client, registry string, p etcdwrite.Pacing, oneKey bool) (Budget, error) {
	b := Budget{pacing: p.Normalized()}
	for _, c := range []struct {
		prefix string
		n      *int64
	}{{registry, &b.Keys}, {registry + "events/", &b.Events}} {
		resp, err := cli.Get(ctx, c.prefix, clientv3.WithRange(etcdscan.PrefixEnd(c.prefix)), clientv3.WithCountOnly(), clientv3.WithSerializable())
		if err != nil {
			return b, fmt.Errorf("count the keys under %s: %w", c.prefix, err)
		}
		*c.n = resp.Count
	}
	b.Audit = time.Duration(float64(b.Keys) / RemovalFloor * float64(time.Second))
	r := &Removal{Events: make([]Event, min(b.Events, int64(MaxRemoval)))}
	b.Deletes = r.Duration(p, oneKey)
	return b, nil
}

// Fits is nil when the removal's slowest run, with a quarter to spare,
// fits in left, the time --command-timeout (timeout) leaves; else it says
// why not and which --command-timeout would do. On a big keyspace that is
// known from two counts, before minutes of reading (a removal that does
// not fit is refused again after its audit, from what the audit found).
func (b Budget) Fits(left, timeout time.Duration) error {
	need := b.Total() * 4 / 3
	if need <= left {
		return nil
	}
	return fmt.Errorf("a removal over %s (%s of them events) may take up to %s: its audit at %d keys a second while etcd is busy, then the deletes of at most %d events at --rate %g with --batch-size %d; that is more than --command-timeout %s leaves: give --command-timeout %s or more; nothing was changed",
		plural.Of(int(b.Keys), "key"), strconv.FormatInt(b.Events, 10), b.Total().Round(time.Second), RemovalFloor, MaxRemoval, b.pacing.PerSecond, b.pacing.BatchSize, timeout, (need + time.Minute).Round(time.Minute))
}
