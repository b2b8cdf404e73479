package etcdscan

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/internal/etcdtest"
)

// countingPacer counts the keys it was asked to wait for.
type countingPacer struct{ keys, calls int }

func (p *countingPacer) Wait(_ context.Context, n int) error {
	p.keys += n
	p.calls++
	return nil
}

// TestSetPacer: a store given a pacer waits on it for every key it reads,
// streamed or paged, instead of its fixed pace.
func TestSetPacer(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	ctx := context.Background()
	const keys = 1500
	for i := 0; i < keys; i += 100 {
		var ops []clientv3.Op
		for j := i; j < i+100; j++ {
			ops = append(ops, clientv3.OpPut(fmt.Sprintf("/registry/configmaps/ns/c%04d", j), "v"))
		}
		if _, err := cli.Txn(ctx).Then(ops...).Commit(); err != nil {
			t.Fatal(err)
		}
	}
	for _, paged := range []bool{false, true} {
		t.Run(fmt.Sprintf("paged=%v", paged), func(t *testing.T) {
			// A fixed pace of one key a second, which the pacer replaces:
			// at it the read would outlast the context.
			ctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			store, err := NewEtcdStore(ctx, cli, 100)
			if err != nil {
				t.Fatal(err)
			}
			if paged {
				store.DisableStreaming()
			}
			store.SetMaxKeysPerSecond(1)
			p := &countingPacer{}
			store.SetPacer(p)
			read := 0
			if err := store.Range(ctx, "\x00", "\x00", false, func(*mvccpb.KeyValue) error { read++; return nil }); err != nil {
				t.Fatal(err)
			}
			if read != keys || p.keys < keys || p.calls == 0 {
				t.Errorf("read %d keys, the pacer was asked for %d in %d calls; want %d", read, p.keys, p.calls, keys)
			}
		})
	}
}
