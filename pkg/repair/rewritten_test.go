package repair

import (
	"context"
	"testing"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdwrite"
)

// TestRestoreWritesBackARewrittenKey: a key regghost rewrote through the
// API server (a webhook entry removed) goes back to its backed-up bytes
// only while nobody changed it since.
func TestRestoreWritesBackARewrittenKey(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	ctx := context.Background()
	tests := []struct {
		name      string
		changed   bool
		want      etcdwrite.Outcome
		wantValue string
	}{
		{"as regghost left it", false, etcdwrite.Restored, "before"},
		{"changed since", true, etcdwrite.Conflict, "changed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := "/registry/validatingwebhookconfigurations/" + string(tt.want)
			resp, err := cli.Put(ctx, key, "after")
			if err != nil {
				t.Fatal(err)
			}
			left := resp.Header.Revision
			if tt.changed {
				if _, err := cli.Put(ctx, key, "changed"); err != nil {
					t.Fatal(err)
				}
			}
			b := &backup.Backup{Prefix: "/registry/", Entries: []backup.Entry{{Key: key, Value: []byte("before"), ModRevision: left - 1, Rewritten: left}}}
			res, err := RestoreWith(ctx, cli, b, RestoreOptions{})
			if err != nil && tt.want == etcdwrite.Restored {
				t.Fatal(err)
			}
			if len(res) != 1 || res[0].Outcome != tt.want {
				t.Fatalf("results %+v, want %s", res, tt.want)
			}
			got, err := cli.Get(ctx, key)
			if err != nil || string(got.Kvs[0].Value) != tt.wantValue {
				t.Errorf("value %q, want %q (%v)", got.Kvs[0].Value, tt.wantValue, err)
			}
		})
	}
}
