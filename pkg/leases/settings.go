package leases

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

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
	if node != nil && node.LeaseFlagsFrom != "" {
		source = node.LeaseFlagsFrom
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
	if given.MaxObjectCount > 0 {
		o.MaxObjectCount = given.MaxObjectCount
	}
	if n.LeaseReuse > 0 {
		o.LeaseReuse = n.LeaseReuse
	}
	if node == nil || node.Source == "" {
		source = "no kube-apiserver configuration found on this node"
	}
	return o, fmt.Sprintf("Judged with event TTL %s (%s), lease reuse %s (%s), at most %d keys a lease (%s). Read from: %s.",
		o.EventTTL, from(given.EventTTL > 0, n.EventTTL > 0, "event-ttl"),
		o.LeaseReuse, from(false, n.LeaseReuse > 0, "lease-reuse-duration-seconds"),
		o.MaxObjectCount, maxFrom(given.MaxObjectCount > 0), source)
}

// maxFrom says where the keys-a-lease limit came from: kube-apiserver puts
// at most 1000 keys on one lease (built in, no flag of its own).
func maxFrom(given bool) string {
	if given {
		return "--lease-max-object-count"
	}
	return "the most kube-apiserver puts on one lease"
}

// GroupResourceOf is the resource a key under registry belongs to, for
// the EncryptionConfiguration's lookup (events, leases.coordination.k8s.io).
func GroupResourceOf(registry, key string) schema.GroupResource {
	rest := strings.TrimPrefix(key, registry)
	res, _, _ := strings.Cut(rest, "/")
	if res == "leases" {
		return schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}
	}
	return schema.GroupResource{Resource: res}
}

// ShorterThanConfigured refuses, for a removal, an --event-ttl given
// shorter than the one this node's kube-apiserver runs with: the events
// between the two are ones the API server still serves.
func ShorterThanConfigured(given Given, node *nodeconfig.Found) error {
	if given.EventTTL <= 0 || node == nil || node.EventTTL <= given.EventTTL {
		return nil
	}
	source := node.Source
	if node.LeaseFlagsFrom != "" {
		source = node.LeaseFlagsFrom
	}
	return fmt.Errorf("--event-ttl %s is shorter than the --event-ttl %s in %s: the events between the two are ones kube-apiserver still serves; give %s or more", given.EventTTL, node.EventTTL, source, node.EventTTL)
}
