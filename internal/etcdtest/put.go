package etcdtest

import (
	"context"
	"testing"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Put writes key and returns it as etcd holds it then.
func Put(t testing.TB, cli *clientv3.Client, key, value string) *mvccpb.KeyValue {
	t.Helper()
	if _, err := cli.Put(context.Background(), key, value); err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Kvs[0]
}
