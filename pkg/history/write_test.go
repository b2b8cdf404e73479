package history

import (
	"context"
	"strings"
	"testing"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/regghost/regghost/internal/etcdtest"
)

// TestWriteTellsCreatesFromUpdates: etcd counts versions; kine reports 0
// for every write, and its create is the write at its own create revision.
func TestWriteTellsCreatesFromUpdates(t *testing.T) {
	b := &builder{sel: Selection{Registry: "/registry/"}}
	tests := []struct {
		name string
		kv   *mvccpb.KeyValue
		want string
	}{
		{"etcd create", &mvccpb.KeyValue{CreateRevision: 5, ModRevision: 5, Version: 1}, Created},
		{"etcd update", &mvccpb.KeyValue{CreateRevision: 5, ModRevision: 7, Version: 2}, Updated},
		{"kine create", &mvccpb.KeyValue{CreateRevision: 9, ModRevision: 9}, Created},
		{"kine update", &mvccpb.KeyValue{CreateRevision: 9, ModRevision: 12}, Updated},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.kv.Key = []byte("/registry/configmaps/a/c")
			if ev := b.write(context.Background(), string(tc.kv.Key), tc.kv); ev.Type != tc.want {
				t.Errorf("%s, want %s", ev.Type, tc.want)
			}
		})
	}
}

// TestRevisionAheadIsRefused: a live history from a revision etcd has not
// reached is an error, not a backwards range.
func TestRevisionAheadIsRefused(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	_, err := FromEtcd(context.Background(), cli, Selection{Registry: "/registry/", Key: "/registry/configmaps/a/c"}, Options{From: 99999999})
	if err == nil || !strings.Contains(err.Error(), "is ahead of etcd's current revision") {
		t.Errorf("err %v", err)
	}
}
