package etcdtest

import (
	"context"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/pkg/backup"
)

// Put writes key and returns it as a backup entry at the revisions etcd
// gave it.
func Put(t testing.TB, cli *clientv3.Client, key, value string) backup.Entry {
	t.Helper()
	if _, err := cli.Put(context.Background(), key, value); err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	kv := resp.Kvs[0]
	return backup.Entry{Key: key, Value: kv.Value, CreateRevision: kv.CreateRevision, ModRevision: kv.ModRevision, Version: kv.Version}
}
