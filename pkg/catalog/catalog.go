package catalog

import (
	"sort"
	"strings"
)

// Resource is one API resource as the cluster serves it.
type Resource struct {
	Group      string `json:"group"`
	Version    string `json:"version"`
	Resource   string `json:"resource"`
	Kind       string `json:"kind"`
	Namespaced bool   `json:"namespaced"`
	// Custom is true for resources defined by a CustomResourceDefinition.
	Custom bool `json:"custom,omitempty"`
	// OffByDefault marks a built-in resource a stock kube-apiserver does not
	// serve unless --runtime-config or a feature gate turns it on.
	OffByDefault bool `json:"offByDefault,omitempty"`
}

// GroupResource renders the resource as "<resource>.<group>" (or "<resource>"
// for the core group), as kubectl does.
func (r Resource) GroupResource() string {
	if r.Group == "" {
		return r.Resource
	}
	return r.Resource + "." + r.Group
}

// Prefix is the resource's storage prefix.
func (r Resource) Prefix() string { return StoragePrefix(r.Group, r.Resource, r.Custom) }

// Catalog maps storage prefixes to the resources the cluster serves.
type Catalog struct {
	// Source says where the catalog came from, for reports.
	Source string
	// byPrefix lists every served resource stored under a prefix; several
	// groups can share one (events and events.k8s.io events).
	byPrefix map[string][]Resource
	byKind   map[[2]string]Resource
	groups   map[string]bool
	// failed holds API groups whose discovery failed: what they serve is unknown.
	failed []string
}

// New builds a catalog from served resources. failedGroups are API groups
// whose discovery failed.
func New(source string, resources []Resource, failedGroups []string) *Catalog {
	c := &Catalog{Source: source, byPrefix: map[string][]Resource{}, byKind: map[[2]string]Resource{}, groups: map[string]bool{}}
	for _, r := range resources {
		p := r.Prefix()
		c.byPrefix[p] = append(c.byPrefix[p], r)
		c.byKind[[2]string{r.Group, r.Kind}] = r
		c.groups[r.Group] = true
	}
	c.failed = append([]string(nil), failedGroups...)
	sort.Strings(c.failed)
	return c
}

// FailedGroups lists the API groups whose discovery failed, sorted.
func (c *Catalog) FailedGroups() []string { return c.failed }

// GroupFailed reports whether discovery failed for group.
func (c *Catalog) GroupFailed(group string) bool {
	for _, g := range c.failed {
		if g == group {
			return true
		}
	}
	return false
}

// HasGroup reports whether the catalog serves any resource of group.
func (c *Catalog) HasGroup(group string) bool { return c.groups[group] }

// Lookup returns the resources served under a storage prefix.
func (c *Catalog) Lookup(prefix string) ([]Resource, bool) {
	rs, ok := c.byPrefix[prefix]
	return rs, ok
}

// ForKind finds the served resource of an object's group and kind, used to
// look up owners from their ownerReferences.
func (c *Catalog) ForKind(group, kind string) (Resource, bool) {
	r, ok := c.byKind[[2]string{group, kind}]
	return r, ok
}

// Resources lists every resource in the catalog, sorted by group and name.
func (c *Catalog) Resources() []Resource {
	var out []Resource
	for _, rs := range c.byPrefix {
		out = append(out, rs...)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Group != out[j].Group {
			return out[i].Group < out[j].Group
		}
		return out[i].Resource < out[j].Resource
	})
	return out
}

// ResourceFor names the resource stored under a storage prefix: the served
// one when the catalog has it, else the custom resource "<group>/<plural>"
// (a dotted first segment), else a core resource named like the prefix.
func (c *Catalog) ResourceFor(prefix string) Resource {
	if rs, ok := c.Lookup(prefix); ok {
		return rs[0]
	}
	if group, plural, ok := strings.Cut(prefix, "/"); ok && strings.Contains(group, ".") {
		return Resource{Group: group, Resource: plural, Custom: true}
	}
	return Resource{Resource: prefix}
}
