package etcdscan

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/regghost/regghost/internal/etcdtest"
)

func TestNewEtcdStoreAt(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	ctx := context.Background()
	var revs []int64
	for i := 0; i < 5; i++ {
		resp, err := cli.Put(ctx, "/registry/configmaps/a/c", fmt.Sprint(i))
		if err != nil {
			t.Fatal(err)
		}
		revs = append(revs, resp.Header.Revision)
	}
	if c, err := CompactedRevision(ctx, cli); err != nil || c != 0 {
		t.Errorf("nothing compacted: got %d, %v", c, err)
	}
	if _, err := cli.Compact(ctx, revs[2]); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		rev     int64
		want    string
		wantErr string
	}{
		{"the compacted revision itself", revs[2], "2", ""},
		{"a newer one", revs[3], "3", ""},
		{"compacted", revs[1], "", fmt.Sprintf("revision %d is compacted: etcd keeps revisions %d to %d", revs[1], revs[2], revs[4])},
		{"ahead", revs[4] + 10, "", "is ahead of etcd's current revision"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewEtcdStoreAt(ctx, cli, 10, tc.rev)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			kv, err := s.Get(ctx, "/registry/configmaps/a/c")
			if err != nil || string(kv.Value) != tc.want {
				t.Errorf("read %v %v, want %s", kv, err, tc.want)
			}
		})
	}
}
