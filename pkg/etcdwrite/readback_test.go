package etcdwrite

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestReadBacksGiveUpOnADeadEtcd: once etcd failed readBackFailLimit
// read-backs in a row, the keys left fail at once, with the reason.
func TestReadBacksGiveUpOnADeadEtcd(t *testing.T) {
	rb := &ReadBacks{Ctx: context.Background()}
	calls := 0
	fail := func(context.Context) error { calls++; return errors.New("no leader") }
	for i := 0; i < readBackFailLimit+2; i++ {
		err := rb.Do(fail)
		if err == nil {
			t.Fatal("a failing read-back succeeded")
		}
		if i >= readBackFailLimit && !strings.Contains(err.Error(), "did not answer the last 3 read-backs (no leader)") {
			t.Errorf("read-back %d: %v", i, err)
		}
	}
	if calls != readBackFailLimit {
		t.Errorf("%d read-backs sent, want %d", calls, readBackFailLimit)
	}
}
