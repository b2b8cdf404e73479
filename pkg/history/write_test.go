package history

import (
	"context"
	"testing"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

// TestWriteTellsCreatesFromUpdates: etcd counts versions; kine reports 0
// for every write, and its create is the write at its own create revision.
func TestWriteTellsCreatesFromUpdates(t *testing.T) {
	b := &builder{sel: Selection{Registry: "/registry/"}}
	tests := []struct {
		name string
		kv   mvccpb.KeyValue
		want string
	}{
		{"etcd create", mvccpb.KeyValue{CreateRevision: 5, ModRevision: 5, Version: 1}, Created},
		{"etcd update", mvccpb.KeyValue{CreateRevision: 5, ModRevision: 7, Version: 2}, Updated},
		{"kine create", mvccpb.KeyValue{CreateRevision: 9, ModRevision: 9}, Created},
		{"kine update", mvccpb.KeyValue{CreateRevision: 9, ModRevision: 12}, Updated},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.kv.Key = []byte("/registry/configmaps/a/c")
			if ev := b.write(context.Background(), string(tc.kv.Key), &tc.kv); ev.Type != tc.want {
				t.Errorf("%s, want %s", ev.Type, tc.want)
			}
		})
	}
}
