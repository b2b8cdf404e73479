package etcdwrite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"

	"github.com/regghost/regghost/internal/etcdtest"
)

// putSpec writes values[i] at /big/i, each compared absent.
func putSpec(values [][]byte, done map[int]bool) Spec {
	key := func(i int) string { return fmt.Sprintf("/big/%d", i) }
	return Spec{N: len(values),
		Cmp: func(i int) []clientv3.Cmp {
			return []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(key(i)), "=", 0)}
		},
		Op: func(i int) clientv3.Op { return clientv3.OpPut(key(i), string(values[i])) },
		Done: func(i int, ok bool, _ int64) {
			if ok {
				done[i] = true
			}
		}}
}

func bigValues(n, size int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = bytes.Repeat([]byte{byte('a' + i)}, size)
	}
	return out
}

// TestRunSizesTransactionsByBytes writes objects as big as real ones (eight
// ConfigMaps of ~920 KB, a Helm release of ~1 MiB) to an etcd with its
// default --max-request-bytes, and to one whose limit is below what
// regghost was told: every key is written, a key too large for any request
// is refused before anything is sent, and one etcd refuses is named with
// the flag that raises the limit.
func TestRunSizesTransactionsByBytes(t *testing.T) {
	ctx := context.Background()
	defaults, _ := etcdtest.Start(t)
	small, _ := etcdtest.StartWith(t, func(c *embed.Config) { c.MaxRequestBytes = 512 << 10 })
	for _, tc := range []struct {
		name    string
		cli     *clientv3.Client
		pacing  Pacing
		values  [][]byte
		wantErr string
		// written is how many keys must be written (all when wantErr is "").
		written int
	}{
		{name: "eight 920 KB ConfigMaps and a 1 MiB release", cli: defaults,
			values: append(bigValues(8, 920<<10), bytes.Repeat([]byte("h"), 1000<<10))},
		{name: "many small keys still share transactions", cli: defaults, values: bigValues(100, 1<<10)},
		{name: "etcd's limit below the one regghost was told: batches split", cli: small,
			values: bigValues(6, 200<<10)},
		{name: "one key larger than the limit: refused before anything is sent", cli: defaults,
			values:  append(bigValues(2, 1<<10), bytes.Repeat([]byte("x"), DefaultMaxRequestBytes)),
			wantErr: "more than the 1572864 etcd accepts (--max-request-bytes): nothing was written"},
		{name: "one key etcd refuses: named with the flag", cli: small,
			values:  append(bigValues(1, 1<<10), bytes.Repeat([]byte("y"), 600<<10)),
			wantErr: "was refused as too large", written: 1},
		{name: "a key as big as etcd accepts goes through", cli: defaults, values: [][]byte{bytes.Repeat([]byte("z"), DefaultMaxRequestBytes-3000)}},
		{name: "a raised limit lets a big key through", cli: defaults,
			pacing: Pacing{MaxRequestBytes: 1 << 20}, values: bigValues(3, 700<<10)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.cli.Delete(ctx, "/big/", clientv3.WithPrefix()); err != nil {
				t.Fatal(err)
			}
			done := map[int]bool{}
			p := tc.pacing
			p.PerSecond = 1000
			err := Run(ctx, tc.cli, p, putSpec(tc.values, done))
			resp, gerr := tc.cli.Get(ctx, "/big/", clientv3.WithPrefix(), clientv3.WithCountOnly())
			if gerr != nil {
				t.Fatal(gerr)
			}
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				if len(done) != len(tc.values) || resp.Count != int64(len(tc.values)) {
					t.Fatalf("%d keys reported written, %d stored, want %d", len(done), resp.Count, len(tc.values))
				}
				return
			}
			var tl *TooLargeError
			if !errors.As(err, &tl) || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), MaxRequestBytesFlag) {
				t.Fatalf("Run: %v, want a *TooLargeError saying %q", err, tc.wantErr)
			}
			if tl.Key != fmt.Sprintf("/big/%d", len(tc.values)-1) {
				t.Errorf("the error names %s, want the big key", tl.Key)
			}
			if len(done) != tc.written || resp.Count != int64(tc.written) {
				t.Errorf("%d keys reported written, %d stored, want %d", len(done), resp.Count, tc.written)
			}
		})
	}
}

// TestRunSplitsForAMemberWithFewerTxnOps: an etcd run with a --max-txn-ops
// below the batch regghost sends refuses the transaction for its number
// of operations: the batch is split until etcd takes it, every key
// written (a refusal before the fix).
func TestRunSplitsForAMemberWithFewerTxnOps(t *testing.T) {
	ctx := context.Background()
	cli, _ := etcdtest.StartWith(t, func(c *embed.Config) { c.MaxTxnOps = 8 })
	done := map[int]bool{}
	values := bigValues(40, 100)
	if err := Run(ctx, cli, Pacing{PerSecond: 1000, BatchSize: 40}, putSpec(values, done)); err != nil {
		t.Fatalf("Run against --max-txn-ops 8: %v", err)
	}
	resp, err := cli.Get(ctx, "/big/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || len(done) != len(values) || resp.Count != int64(len(values)) {
		t.Fatalf("%d keys reported written, %d stored (%v), want %d", len(done), resp.Count, err, len(values))
	}
}

// TestRunStopsBetweenTheHalvesOfASplit: a stop (SIGINT, a lost lock)
// arriving while a batch etcd refused for its size is split is honoured
// before the next half is sent, not only between batches.
func TestRunStopsBetweenTheHalvesOfASplit(t *testing.T) {
	ctx := context.Background()
	small, _ := etcdtest.StartWith(t, func(c *embed.Config) { c.MaxRequestBytes = 512 << 10 })
	stop := make(chan struct{})
	done := map[int]bool{}
	spec := putSpec(bigValues(6, 200<<10), done)
	inner := spec.Done
	spec.Done = func(i int, ok bool, rev int64) {
		inner(i, ok, rev)
		select {
		case <-stop:
		default:
			close(stop) // the first key written: a SIGINT arrives
		}
	}
	err := Run(ctx, small, Pacing{PerSecond: 1000, Stop: stop}, spec)
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("Run: %v, want ErrInterrupted", err)
	}
	resp, gerr := small.Get(ctx, "/big/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if gerr != nil || resp.Count != int64(len(done)) || len(done) >= 6 {
		t.Fatalf("%d keys written (%d stored) after the stop; want the run stopped within the split", len(done), resp.Count)
	}
}

// TestTooManyRequestsIsAPause: etcd's "too many requests" (its applied
// index trails) is backed off and sent again, not a failure.
func TestTooManyRequestsIsAPause(t *testing.T) {
	if !Transient(rpctypes.ErrGRPCRequestTooManyRequests) || !Transient(rpctypes.ErrTooManyRequests) {
		t.Error("too many requests is not transient")
	}
}
