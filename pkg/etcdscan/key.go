package etcdscan

import (
	"fmt"
	"strings"

	"github.com/regghost/regghost/pkg/catalog"
)

// Key is what an etcd key's path says about the object stored under it.
type Key struct {
	// Prefix is the storage prefix below the registry prefix, such as "pods",
	// "services/specs" or "example.com/widgets".
	Prefix string
	// Namespace is empty for cluster-scoped keys.
	Namespace string
	Name      string
}

// ParseKey splits a key under registry (which ends in "/") into storage
// prefix, namespace and name. Object names never contain "/", so one segment
// after the prefix is a cluster-scoped name and two are namespace and name.
func ParseKey(registry, key string) (Key, error) {
	rest, ok := strings.CutPrefix(key, registry)
	if !ok {
		return Key{}, fmt.Errorf("key %q is not under %q", key, registry)
	}
	segs := strings.Split(rest, "/")
	n := catalog.PrefixSegments(segs[0])
	if len(segs) <= n {
		return Key{}, fmt.Errorf("key %q has no object name after its resource prefix", key)
	}
	k := Key{Prefix: strings.Join(segs[:n], "/")}
	obj := segs[n:]
	for _, s := range obj {
		if s == "" {
			return Key{}, fmt.Errorf("key %q has an empty path segment", key)
		}
	}
	switch len(obj) {
	case 1:
		k.Name = obj[0]
	case 2:
		k.Namespace, k.Name = obj[0], obj[1]
	default:
		return Key{}, fmt.Errorf("key %q has %d segments after %s/, want <name> or <namespace>/<name>", key, len(obj), k.Prefix)
	}
	return k, nil
}

// ObjectKey builds the etcd key of an object.
func ObjectKey(registry, prefix, namespace, name string) string {
	if namespace == "" {
		return registry + prefix + "/" + name
	}
	return registry + prefix + "/" + namespace + "/" + name
}

// prefixOf returns the storage prefix of the first key under registry in rest,
// used to skip from one resource prefix to the next.
func prefixOf(registry, key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, registry)
	if !ok || rest == "" {
		return "", false
	}
	segs := strings.SplitN(rest, "/", 3)
	n := catalog.PrefixSegments(segs[0])
	if len(segs) < n {
		return rest, true
	}
	return strings.Join(segs[:n], "/"), true
}
