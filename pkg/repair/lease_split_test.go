package repair

import (
	"context"
	"fmt"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/backup"
)

// TestRestoreSplitsABigLease: the keys of one backed-up lease come back
// under new leases of at most maxKeysPerLease keys each (a lease emptied in
// batches is never made whole again, to stall etcd when it expires), and a
// key that had no lease gets none.
func TestRestoreSplitsABigLease(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	b := &backup.Backup{}
	var todo []int
	for i := range 2*maxKeysPerLease + 5 {
		b.Entries = append(b.Entries, backup.Entry{Key: fmt.Sprintf("/registry/events/load/e%05d", i), Lease: 0x42, LeaseTTL: 3600})
		todo = append(todo, i)
	}
	b.Entries = append(b.Entries, backup.Entry{Key: "/registry/events/web/none"})
	todo = append(todo, len(b.Entries)-1)
	got, err := grantLeases(context.Background(), cli, b, todo)
	if err != nil {
		t.Fatal(err)
	}
	per := map[clientv3.LeaseID]int{}
	for _, id := range got {
		per[id]++
	}
	if len(per) != 3 || len(got) != 2*maxKeysPerLease+5 {
		t.Fatalf("%d leases for %d keys: %v", len(per), len(got), per)
	}
	for id, n := range per {
		if n > maxKeysPerLease {
			t.Errorf("lease %x holds %d keys", id, n)
		}
	}
}
