package apiview

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/discovery"
	clientdiscovery "k8s.io/client-go/discovery"
)

// Stored is how the API server serves and stores one resource.
type Stored struct {
	Group    string `json:"group"`
	Resource string `json:"resource"`
	Kind     string `json:"kind"`
	// Versions are the versions of Group it is served at.
	Versions []string `json:"versions"`
	// Hash is discovery's storageVersionHash: the hash of the group,
	// version and kind it is stored at ("" when the server does not say).
	Hash string `json:"-"`
	// Storage is the group/version whose hash is Hash, among those the
	// server serves the kind at ("" when none is).
	Storage string `json:"storage"`
}

// StoredAt reports whether an object of kind stored at groupVersion is at
// the resource's storage version. ok is false when the server does not say.
func (s Stored) StoredAt(groupVersion, kind string) (at, ok bool) {
	if s.Hash == "" {
		return false, false
	}
	gv, err := schema.ParseGroupVersion(groupVersion)
	if err != nil {
		return false, true
	}
	return StorageHash(gv.Group, gv.Version, kind) == s.Hash, true
}

// StorageHash is the storageVersionHash the API server gives a resource
// stored at group/version as kind: kube-apiserver's own function, which its
// documentation says may change, so the e2e suite checks every release's
// discovery against it (each resource's hash names one served version).
func StorageHash(group, version, kind string) string {
	return discovery.StorageVersionHash(group, version, kind)
}

// StoredResources reads from the API server's discovery every resource it
// stores, with the versions it serves and the version it stores at: one it
// serves the kind at, or one of decodes ("group/version/Kind", what the
// release reads without serving). Groups whose discovery failed are named
// in the error, with what was read.
func (v *View) StoredResources(ctx context.Context, decodes []string) (map[schema.GroupResource]*Stored, error) {
	disc, err := v.legacyDiscovery()
	if err != nil {
		return nil, err
	}
	_, lists, err := disc.ServerGroupsAndResources()
	var failed error
	if err != nil {
		var gdf *clientdiscovery.ErrGroupDiscoveryFailed
		if !errors.As(err, &gdf) {
			return nil, fmt.Errorf("discover resources on %s: %w", v.Host, err)
		}
		failed = fmt.Errorf("discover resources on %s: %w", v.Host, err)
	}
	out := map[schema.GroupResource]*Stored{}
	// served lists, per kind, every group/version serving it.
	served := map[string][]schema.GroupVersion{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") {
				continue
			}
			served[r.Kind] = append(served[r.Kind], gv)
			gr := schema.GroupResource{Group: gv.Group, Resource: r.Name}
			s := out[gr]
			if s == nil {
				s = &Stored{Group: gv.Group, Resource: r.Name, Kind: r.Kind}
				out[gr] = s
			}
			s.Versions = append(s.Versions, gv.Version)
			if r.StorageVersionHash != "" {
				s.Hash = r.StorageVersionHash
			}
		}
	}
	for _, s := range out {
		sort.Strings(s.Versions)
		s.nameStorage(slices.Concat(served[s.Kind], decodedAt(decodes, s.Kind)))
	}
	return out, failed
}

// StoredResource reads how the API server serves and stores one resource:
// only its group's discovery is asked (an aggregated API that is down
// elsewhere does not matter), and the storage version is named among the
// versions of that group it serves and decodes ("group/version/Kind", what
// its release reads without serving). ok is false when it serves none.
func (v *View) StoredResource(ctx context.Context, gr schema.GroupResource, decodes []string) (s Stored, ok bool, err error) {
	disc, err := v.legacyDiscovery()
	if err != nil {
		return s, false, err
	}
	groups, err := disc.ServerGroups()
	if err != nil {
		return s, false, fmt.Errorf("discover API groups on %s: %w", v.Host, err)
	}
	s = Stored{Group: gr.Group, Resource: gr.Resource}
	var candidates []schema.GroupVersion
	for _, g := range groups.Groups {
		if g.Name != gr.Group {
			continue
		}
		for _, gv := range g.Versions {
			l, err := disc.ServerResourcesForGroupVersion(gv.GroupVersion)
			if err != nil {
				return s, false, fmt.Errorf("discover %s on %s: %w", gv.GroupVersion, v.Host, err)
			}
			for _, r := range l.APIResources {
				if r.Name != gr.Resource {
					continue
				}
				ok = true
				s.Kind = r.Kind
				s.Versions = append(s.Versions, gv.Version)
				candidates = append(candidates, schema.GroupVersion{Group: gr.Group, Version: gv.Version})
				if r.StorageVersionHash != "" {
					s.Hash = r.StorageVersionHash
				}
			}
		}
	}
	sort.Strings(s.Versions)
	s.nameStorage(append(candidates, decodedAt(decodes, s.Kind)...))
	return s, ok, nil
}

// legacyDiscovery is a discovery client that reads each group/version's own
// document: aggregated discovery leaves storageVersionHash out.
func (v *View) legacyDiscovery() (*clientdiscovery.DiscoveryClient, error) {
	disc, err := clientdiscovery.NewDiscoveryClientForConfig(v.Config)
	if err != nil {
		return nil, fmt.Errorf("api server discovery client: %w", err)
	}
	disc.UseLegacyDiscovery = true
	return disc, nil
}

// decodedAt are the group/versions decodes ("group/version/Kind", "/v1/Pod"
// for the core group) holds kind at.
func decodedAt(decodes []string, kind string) []schema.GroupVersion {
	var out []schema.GroupVersion
	for _, d := range decodes {
		if i := strings.LastIndex(d, "/"); i > 0 && d[i+1:] == kind {
			if gv, err := schema.ParseGroupVersion(strings.TrimPrefix(d[:i], "/")); err == nil {
				out = append(out, gv)
			}
		}
	}
	return out
}

// nameStorage sets Storage to the first of candidates whose hash is Hash.
func (s *Stored) nameStorage(candidates []schema.GroupVersion) {
	if s.Hash == "" {
		return
	}
	for _, gv := range candidates {
		if StorageHash(gv.Group, gv.Version, s.Kind) == s.Hash {
			s.Storage = gv.String()
			return
		}
	}
}

// SortedStored lists m by group and resource.
func SortedStored(m map[schema.GroupResource]*Stored) []Stored {
	var out []Stored
	for _, s := range m {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b Stored) int {
		if c := strings.Compare(a.Group, b.Group); c != 0 {
			return c
		}
		return strings.Compare(a.Resource, b.Resource)
	})
	return out
}
