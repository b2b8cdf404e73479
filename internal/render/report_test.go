package render

import (
	"testing"

	"github.com/regghost/regghost/pkg/leases"
)

// TestLeaseClasses: the scan's summary names each fault class the leases
// audit counted, one and many; nothing (or only keyless leases, which are
// normal, or no audit) says nothing.
func TestLeaseClasses(t *testing.T) {
	for _, tt := range []struct {
		counts map[string]int
		want   string
	}{
		{nil, ""},
		{map[string]int{leases.ClassPastTTL: 0, leases.ClassKeyless: 40}, ""},
		{map[string]int{leases.ClassPastTTL: 1}, "Leases: 1 event past its TTL; regghost leases names each and removes what outlived its TTL."},
		{map[string]int{leases.ClassMaster: 1, leases.ClassPastTTL: 1200, leases.ClassBig: 2, leases.ClassKeyless: 3},
			"Leases: 1200 events past their TTL, 2 leases holding more keys than a revoke can take without stalling etcd, 1 masterlease no kube-apiserver answers at; regghost leases names each and removes what outlived its TTL."},
	} {
		if got := leaseClasses(tt.counts); got != tt.want {
			t.Errorf("%v:\n got %q\nwant %q", tt.counts, got, tt.want)
		}
	}
}

// TestLeasesHold: space's line names each class that holds keys, with its
// share of the values' bytes; none holding any says nothing.
func TestLeasesHold(t *testing.T) {
	for _, tt := range []struct {
		held []leases.Held
		want string
	}{
		{nil, ""},
		{[]leases.Held{{Class: leases.ClassPastTTL}}, ""},
		{[]leases.Held{{Class: leases.ClassPastTTL, Keys: 1, Bytes: 2048}, {Class: leases.ClassNoLease}, {Class: leases.ClassBig, Keys: 1200, Bytes: 4096}},
			"Leases hold 1 key of events past their TTL, 2.0 KiB (25%); 1200 keys on leases over the limit, 4.0 KiB (50%): regghost leases lists them and removes what is past its TTL."},
	} {
		if got := leasesHold(tt.held, 8192); got != tt.want {
			t.Errorf("%v:\n got %q\nwant %q", tt.held, got, tt.want)
		}
	}
}
