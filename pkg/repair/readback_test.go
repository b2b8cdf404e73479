package repair

import (
	"context"
	"errors"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdwrite"
)

// flakyKV is a KV whose reads of some keys fail, and which can run a
// function after each transaction (to end the caller's context).
type flakyKV struct {
	clientv3.KV
	failReads map[string]bool
	afterTxn  func()
}

func (f flakyKV) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	if f.failReads[key] {
		return nil, errors.New("read refused")
	}
	return f.KV.Get(ctx, key, opts...)
}

func (f flakyKV) Txn(ctx context.Context) clientv3.Txn {
	return afterTxn{Txn: f.KV.Txn(ctx), after: f.afterTxn, failReads: f.failReads}
}

type afterTxn struct {
	clientv3.Txn
	after func()
	// failReads fails a transaction that reads one of them.
	failReads map[string]bool
	failed    bool
}

func (t afterTxn) If(cs ...clientv3.Cmp) clientv3.Txn {
	t.Txn = t.Txn.If(cs...)
	return t
}
func (t afterTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	for _, op := range ops {
		t.failed = t.failed || op.IsGet() && t.failReads[string(op.KeyBytes())]
	}
	t.Txn = t.Txn.Then(ops...)
	return t
}
func (t afterTxn) Else(ops ...clientv3.Op) clientv3.Txn {
	t.Txn = t.Txn.Else(ops...)
	return t
}
func (t afterTxn) Commit() (*clientv3.TxnResponse, error) {
	if t.failed {
		return nil, errors.New("read refused")
	}
	resp, err := t.Txn.Commit()
	if t.after != nil {
		t.after()
	}
	return resp, err
}

// TestGuardedDeleteReadsEveryKeyBack: every key gets an outcome read back
// from etcd, on a context of its own, when the command's context ran out
// before or right after the deletes; a key that cannot be read back gets
// that as its outcome and the others are still read.
func TestGuardedDeleteReadsEveryKeyBack(t *testing.T) {
	keys := []string{"/registry/pods/a/1", "/registry/pods/a/2", "/registry/pods/a/3"}
	tests := []struct {
		name string
		// setup returns the context and KV to delete with.
		setup  func(ctx context.Context, cancel context.CancelFunc, kv clientv3.KV) (context.Context, clientv3.KV)
		want   []etcdwrite.Outcome
		detail []string
	}{
		{name: "the time ran out before the deletes",
			setup: func(ctx context.Context, cancel context.CancelFunc, kv clientv3.KV) (context.Context, clientv3.KV) {
				cancel()
				return ctx, kv
			},
			want:   []etcdwrite.Outcome{etcdwrite.NotAttempted, etcdwrite.NotAttempted, etcdwrite.NotAttempted},
			detail: []string{"still present when read back", "still present when read back", "still present when read back"}},
		{name: "the time ran out right after the deletes",
			setup: func(ctx context.Context, cancel context.CancelFunc, kv clientv3.KV) (context.Context, clientv3.KV) {
				return ctx, flakyKV{KV: kv, afterTxn: cancel}
			},
			want:   []etcdwrite.Outcome{etcdwrite.Deleted, etcdwrite.Deleted, etcdwrite.Deleted},
			detail: []string{"", "", ""}},
		{name: "one key cannot be read back",
			setup: func(ctx context.Context, cancel context.CancelFunc, kv clientv3.KV) (context.Context, clientv3.KV) {
				cancel()
				return ctx, flakyKV{KV: kv, failReads: map[string]bool{keys[0]: true}}
			},
			want:   []etcdwrite.Outcome{etcdwrite.NotAttempted, etcdwrite.NotAttempted, etcdwrite.NotAttempted},
			detail: []string{"could not be read back (read refused)", "still present when read back", "still present when read back"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cli, _ := etcdtest.Start(t)
			var entries []backup.Entry
			for _, k := range keys {
				entries = append(entries, backup.EntryOf(etcdtest.Put(t, cli, k, "v")))
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			dctx, kv := tt.setup(ctx, cancel, cli)
			results, err := GuardedDelete(dctx, kv, entries, etcdwrite.Pacing{BatchSize: len(keys), PerSecond: 1000}, nil)
			for i, r := range results {
				if r.Outcome != tt.want[i] || !strings.Contains(r.Detail, tt.detail[i]) {
					t.Errorf("%s: %s (%s), want %s (%s); err %v", r.Key, r.Outcome, r.Detail, tt.want[i], tt.detail[i], err)
				}
			}
		})
	}
}

// countingKV counts single reads and transactions.
type countingKV struct {
	clientv3.KV
	gets, txns *int
}

func (c countingKV) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	*c.gets++
	return c.KV.Get(ctx, key, opts...)
}

func (c countingKV) Txn(ctx context.Context) clientv3.Txn {
	*c.txns++
	return c.KV.Txn(ctx)
}

// TestReadBackInTransactions: the keys are read back in read-only
// transactions of the deletes' batch, never one request per key (which
// other clients' writes would wait behind); every outcome as before.
func TestReadBackInTransactions(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	var entries []backup.Entry
	for i := range 10 {
		entries = append(entries, backup.EntryOf(etcdtest.Put(t, cli, "/registry/pods/a/"+string(rune('a'+i)), "v")))
	}
	var gets, txns int
	results, err := GuardedDelete(context.Background(), countingKV{KV: cli, gets: &gets, txns: &txns}, entries, etcdwrite.Pacing{BatchSize: 5, PerSecond: 1000}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if r.Outcome != etcdwrite.Deleted {
			t.Errorf("%s: %s (%s)", r.Key, r.Outcome, r.Detail)
		}
	}
	// Two delete transactions, two read-back transactions.
	if gets != 0 || txns != 4 {
		t.Errorf("%d single reads and %d transactions, want 0 and 4", gets, txns)
	}
}

// TestReadBackOnlyWhatWasSent: when the deletes stopped before a key was
// sent, only the transaction that may have been in flight is read back;
// keys never sent stay not attempted, unread (never a paced read of each).
func TestReadBackOnlyWhatWasSent(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	var entries []backup.Entry
	for i := range 10 {
		entries = append(entries, backup.EntryOf(etcdtest.Put(t, cli, "/registry/pods/b/"+string(rune('a'+i)), "v")))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var gets, txns int
	results, _ := GuardedDelete(ctx, countingKV{KV: cli, gets: &gets, txns: &txns}, entries, etcdwrite.Pacing{BatchSize: 2, PerSecond: 1000}, nil)
	for i, r := range results {
		want := "not attempted: the deletes stopped before it"
		if i < 2 {
			want = "still present when read back"
		}
		if r.Outcome != etcdwrite.NotAttempted || !strings.Contains(r.Detail, want) {
			t.Errorf("%s: %s (%s), want not attempted (%s)", r.Key, r.Outcome, r.Detail, want)
		}
	}
	if gets != 0 || txns != 1 {
		t.Errorf("%d single reads and %d transactions, want the one batch that may have been in flight read back", gets, txns)
	}
}
