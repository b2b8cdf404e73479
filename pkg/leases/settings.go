package leases

import (
	"fmt"
	"time"

	"github.com/regghost/regghost/pkg/nodeconfig"
)

// Given are the settings given as flags (0: not given).
type Given struct {
	EventTTL       time.Duration
	MaxObjectCount int
}

// Judged fills o's kube-apiserver settings from what was given, else from
// this node's kube-apiserver configuration (node; nil when none was read),
// else kube-apiserver's defaults, and says where each came from.
func Judged(o Options, given Given, node *nodeconfig.Found) (Options, string) {
	source := "this node's kube-apiserver"
	if node != nil && node.Source != "" {
		source = node.Source
	}
	from := func(flag, manifest bool, name string) string {
		switch {
		case flag:
			return "--" + name
		case manifest:
			return "--" + name + " in " + source
		}
		return "kube-apiserver's default"
	}
	var n nodeconfig.Found
	if node != nil {
		n = *node
	}
	o.EventTTL, o.MaxObjectCount, o.LeaseReuse = DefaultEventTTL, DefaultMaxObjectCount, DefaultLeaseReuse
	switch {
	case given.EventTTL > 0:
		o.EventTTL = given.EventTTL
	case n.EventTTL > 0:
		o.EventTTL = n.EventTTL
	}
	switch {
	case given.MaxObjectCount > 0:
		o.MaxObjectCount = given.MaxObjectCount
	case n.LeaseMaxObjectCount > 0:
		o.MaxObjectCount = n.LeaseMaxObjectCount
	}
	if n.LeaseReuse > 0 {
		o.LeaseReuse = n.LeaseReuse
	}
	return o, fmt.Sprintf("Judged with event TTL %s (%s), lease reuse %s (%s), at most %d keys a lease (%s).",
		o.EventTTL, from(given.EventTTL > 0, n.EventTTL > 0, "event-ttl"),
		o.LeaseReuse, from(false, n.LeaseReuse > 0, "lease-reuse-duration-seconds"),
		o.MaxObjectCount, from(given.MaxObjectCount > 0, n.LeaseMaxObjectCount > 0, "lease-max-object-count"))
}
