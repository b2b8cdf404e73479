package leases

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/plural"
)

// Budget is about how long a removal takes at its slowest pace, known
// before its audit reads anything: the audit of every key under the
// registry at RemovalFloor, then the deletes of at most MaxRemoval events
// (of the namespace, with -n) and their read-back at the removal's pacing
// (Removal.Duration), and, for the whole keyspace, the wait before a
// masterlease is deleted. An estimate: an etcd slower than the floor
// makes the audit slower still.
type Budget struct {
	Keys, Events int64
	Audit        time.Duration
	Deletes      time.Duration
	pacing       etcdwrite.Pacing
}

// Total is the audit's time and the deletes'.
func (b Budget) Total() time.Duration { return b.Audit + b.Deletes }

// RemovalBudget counts the keys under registry and the events the
// removal may delete (under registry's events/, or its events/namespace/
// with a namespace), by count-only reads of etcd's index, serializable (no
// value is read), and estimates their removal. oneKey is a datastore that
// takes one key a transaction (kine).
func RemovalBudget(ctx context.Context, cli *clientv3.Client, registry, namespace string, p etcdwrite.Pacing, oneKey bool) (Budget, error) {
	b := Budget{pacing: p.Normalized()}
	events := registry + "events/"
	if namespace != "" {
		events += namespace + "/"
	}
	for _, c := range []struct {
		prefix string
		n      *int64
	}{{registry, &b.Keys}, {events, &b.Events}} {
		resp, err := cli.Get(ctx, c.prefix, clientv3.WithRange(etcdscan.PrefixEnd(c.prefix)), clientv3.WithCountOnly(), clientv3.WithSerializable())
		if err != nil {
			return b, fmt.Errorf("count the keys under %s: %w", c.prefix, err)
		}
		*c.n = resp.Count
	}
	b.Audit = time.Duration(float64(b.Keys) / RemovalFloor * float64(time.Second))
	// Without -n a masterlease may be removed, after its wait.
	b.Deletes = deleteTime(int(min(b.Events, int64(MaxRemoval))), namespace == "", p, oneKey)
	return b, nil
}

// Fits is nil when the removal's slowest run, with a quarter to spare,
// fits in left, the time --command-timeout (timeout) leaves; else it says
// why not and which --command-timeout would do (what the command used so
// far, timeout - left, counted in). On a big keyspace that is known from
// two counts, before minutes of reading; a removal that does not fit is
// refused again after its audit, from what the audit found.
func (b Budget) Fits(left, timeout time.Duration) error {
	need := withSpare(b.Total())
	if need <= left {
		return nil
	}
	suggest := (timeout - left + need + time.Minute - 1).Truncate(time.Minute)
	return fmt.Errorf("a removal over %s (%d of them events it may delete) takes about %s at its slowest: its audit at %d keys a second while etcd is busy, then the deletes of at most %d events at --rate %g with --batch-size %d; that is more than --command-timeout %s leaves: give --command-timeout %s or more; nothing was changed",
		plural.Of(int(b.Keys), "key"), b.Events, b.Total().Round(time.Second), RemovalFloor, MaxRemoval, b.pacing.PerSecond, b.pacing.BatchSize, timeout, suggest)
}
