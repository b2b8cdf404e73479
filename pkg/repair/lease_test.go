package repair

import (
	"context"
	"errors"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/protect"
)

// leaseAnswer is a KVLease whose TimeToLive answers what a test says.
type leaseAnswer struct {
	*clientv3.Client
	ttl int64
	err error
}

func (l leaseAnswer) TimeToLive(context.Context, clientv3.LeaseID, ...clientv3.LeaseOption) (*clientv3.LeaseTimeToLiveResponse, error) {
	if l.err != nil {
		return nil, l.err
	}
	return &clientv3.LeaseTimeToLiveResponse{TTL: l.ttl, GrantedTTL: 120}, nil
}

// TestLeaseTTLThatCannotBeRead: a key's lease TTL that could not be read is
// marked unknown with the reason, never stored as 0 (no lease), and the
// key's delete says a restore cannot give it its lease back.
func TestLeaseTTLThatCannotBeRead(t *testing.T) {
	tests := []struct {
		name    string
		answer  leaseAnswer
		ttl     int64
		unknown string
	}{
		{name: "read", answer: leaseAnswer{ttl: 57}, ttl: 57},
		{name: "less than a second left", answer: leaseAnswer{ttl: 0}, ttl: 1},
		{name: "TimeToLive fails", answer: leaseAnswer{err: errors.New("etcdserver: request timed out")}, unknown: "could not be read: etcdserver: request timed out"},
		{name: "the lease is gone", answer: leaseAnswer{ttl: -1}, unknown: "had expired"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cli, _ := etcdtest.Start(t)
			ctx := context.Background()
			lease, err := cli.Grant(ctx, 120)
			if err != nil {
				t.Fatal(err)
			}
			key := "/registry/events/x/e1"
			if _, err := cli.Put(ctx, key, "event", clientv3.WithLease(lease.ID)); err != nil {
				t.Fatal(err)
			}
			resp, err := cli.Get(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			plan := &Plan{Targets: []etcdscan.Finding{{Key: key, ModRevision: resp.Kvs[0].ModRevision, Classes: []etcdscan.Class{etcdscan.ClassOrphanedNamespace}, Reasons: []string{"r"}}}}
			tt.answer.Client = cli
			entries, _, err := protect.Capture(ctx, tt.answer, etcdwrite.Datastore{Name: "etcd"}, targetWants(plan))
			if err != nil || len(entries) != 1 {
				t.Fatalf("entries %+v: %v", entries, err)
			}
			e := entries[0]
			if e.Lease != int64(lease.ID) || e.LeaseTTL != tt.ttl || (tt.unknown == "") != (e.LeaseTTLUnknown == "") || !strings.Contains(e.LeaseTTLUnknown, tt.unknown) {
				t.Fatalf("entry lease %x ttl %d unknown %q; want ttl %d unknown %q", e.Lease, e.LeaseTTL, e.LeaseTTLUnknown, tt.ttl, tt.unknown)
			}
			results, err := GuardedDelete(ctx, cli, entries, etcdwrite.Pacing{PerSecond: 1000}, nil)
			if err != nil || results[0].Outcome != etcdwrite.Deleted {
				t.Fatalf("delete: %+v %v", results, err)
			}
			if said := strings.Contains(results[0].Detail, "lease TTL unknown"); said != (tt.unknown != "") {
				t.Errorf("delete detail %q", results[0].Detail)
			}
		})
	}
}
