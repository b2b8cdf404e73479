package protect

import (
	"context"
	"fmt"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdwrite"
)

// fewOps is etcd run with a --max-txn-ops below the capture's batch: a
// transaction of more operations is refused.
type fewOps struct {
	*clientv3.Client
	max int
}

func (f fewOps) Txn(ctx context.Context) clientv3.Txn { return fewOpsTxn{f.Client.Txn(ctx), f.max} }

type fewOpsTxn struct {
	clientv3.Txn
	max int
}

func (t fewOpsTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	if len(ops) > t.max {
		return refusedTxn{}
	}
	return fewOpsTxn{t.Txn.Then(ops...), t.max}
}

type refusedTxn struct{ clientv3.Txn }

func (refusedTxn) Commit() (*clientv3.TxnResponse, error) { return nil, rpctypes.ErrTooManyOps }

// TestCaptureReadsInBatches: the capture reads 64 keys a request, every
// key captured as etcd holds it; where etcd refuses a transaction that
// big (a --max-txn-ops below it), the batch is read a key at a time and
// the capture goes on.
func TestCaptureReadsInBatches(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	var wants []Want
	for i := range 100 {
		kv := etcdtest.Put(t, cli, fmt.Sprintf("/registry/configmaps/ns/cm-%03d", i), fmt.Sprintf("v%d", i))
		wants = append(wants, Want{ModRevision: kv.ModRevision, Entry: backup.Entry{Key: string(kv.Key)}})
	}
	for _, tc := range []struct {
		name string
		kv   etcdwrite.KVLease
	}{{"batches of 64", cli}, {"--max-txn-ops 16", fewOps{cli, 16}}} {
		t.Run(tc.name, func(t *testing.T) {
			entries, skipped, err := Capture(context.Background(), tc.kv, etcdwrite.Datastore{Name: "etcd"}, wants)
			if err != nil || len(skipped) != 0 || len(entries) != 100 {
				t.Fatalf("captured %d, skipped %v: %v", len(entries), skipped, err)
			}
			for i, e := range entries {
				if e.Key != wants[i].Entry.Key || string(e.Value) != fmt.Sprintf("v%d", i) {
					t.Errorf("entry %d: %s = %q", i, e.Key, e.Value)
				}
			}
		})
	}
}
