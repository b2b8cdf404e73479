package etcdscan

import (
	"context"
	"fmt"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/regghost/regghost/pkg/catalog"
	"github.com/regghost/regghost/pkg/resolve"
)

// typeState is what the witnesses know about the type stored under a prefix.
type typeState int

const (
	// typeServed: the API server serves it (or, offline, it exists).
	typeServed typeState = iota
	// typeUnservedNow: it exists (a CRD key, or compiled into kube-apiserver)
	// but the API server does not serve it at this moment.
	typeUnservedNow
	// typeForeign: the prefix belongs to an API group served by an
	// aggregated API server, or whose discovery failed: nothing is judged.
	typeForeign
	// typeMissing: nothing can store under the prefix.
	typeMissing
)

// typeVerdict is the resolution of one storage prefix.
type typeVerdict struct {
	state typeState
	// resources are the resources stored under the prefix, for kind and scope
	// checks and API reads; empty when unknown.
	resources []catalog.Resource
	// source says where resources come from: "discovery", "release", "crd".
	source string
	// why explains an unserved-now, foreign or missing state (etcd side).
	why string
	// crdName is the CRD that would define a dotted prefix.
	crdName string
}

// loadTypes reads the CRD and APIService keys through the shared resolver:
// the etcd witness of which custom types exist and which groups aggregated
// API servers own.
func (s *scan) loadTypes(ctx context.Context) error {
	s.verdicts = map[string]typeVerdict{}
	var dec resolve.Decrypter
	if s.opts.Decrypter != nil {
		dec = s.opts.Decrypter
	}
	types, err := resolve.Load(ctx, s.store, s.opts.Prefix, s.opts.Served, dec)
	if err != nil {
		return err
	}
	types.Release = s.opts.Release
	s.types = types
	return nil
}

// resolve decides what is stored under a storage prefix, from the API
// server's discovery when it was asked and from etcd (CRD and APIService
// keys) and the release catalog always.
func (s *scan) resolve(prefix string) typeVerdict {
	if v, ok := s.verdicts[prefix]; ok {
		return v
	}
	v := s.resolveUncached(prefix)
	s.verdicts[prefix] = v
	return v
}

func (s *scan) resolveUncached(prefix string) typeVerdict {
	served := s.opts.Served
	if served != nil {
		if rs, ok := served.Lookup(prefix); ok {
			return typeVerdict{state: typeServed, resources: rs, source: "discovery"}
		}
	}
	release := s.opts.Release
	if group, dotted := catalog.GroupOfPrefix(prefix); dotted {
		crdName := prefix[len(group)+1:] + "." + group
		if c, ok := s.types.CRDs[prefix]; ok {
			v := typeVerdict{state: typeServed, source: "crd", resources: []catalog.Resource{c.Resource()}, crdName: c.Name}
			if served != nil {
				v.state = typeUnservedNow
				v.why = fmt.Sprintf("CustomResourceDefinition %s exists in etcd but the API server does not serve it%s", c.Name, crdNotServing(c.Object))
			}
			return v
		}
		if _, ok := release.Lookup(prefix); !ok {
			if why, ok := s.types.Aggregated[group]; ok {
				return typeVerdict{state: typeForeign, why: "group " + group + " belongs to an aggregated API server (" + why + ")"}
			}
			if served != nil && served.GroupFailed(group) {
				return typeVerdict{state: typeForeign, why: "discovery of group " + group + " failed"}
			}
			return typeVerdict{state: typeMissing, crdName: crdName,
				why: fmt.Sprintf("no CustomResourceDefinition %s in etcd (no %sapiextensions.k8s.io/customresourcedefinitions/%s key), no APIService for group %s, and kube-apiserver %s compiles in nothing under %s/",
					crdName, s.opts.Prefix, crdName, group, catalog.ReleaseVersion(), prefix)}
		}
	}
	if rs, ok := release.Lookup(prefix); ok {
		v := typeVerdict{state: typeServed, resources: rs, source: "release"}
		if served != nil {
			v.state = typeUnservedNow
			off := ""
			if rs[0].OffByDefault {
				off = " (off by default)"
			}
			v.why = fmt.Sprintf("%s is compiled into kube-apiserver %s%s but this API server does not serve it: ",
				rs[0].GroupResource(), catalog.ReleaseVersion(), off)
			switch s.serverRelease() {
			case "older":
				v.why += fmt.Sprintf("it is kube-apiserver %s, an older release that may not have it: a newer one wrote these objects (an upgrade rolled back, or a newer member of the control plane)", s.opts.ServerVersion)
			case "newer":
				v.why += "it was turned off with --runtime-config or a feature gate, or removed after " + catalog.ReleaseVersion()
			default:
				v.why += "it was turned off with --runtime-config or a feature gate (turn it back on to manage these objects), or the API server is an older release than " + catalog.ReleaseVersion() + " without it"
			}
		}
		return v
	}
	why := fmt.Sprintf("nothing kube-apiserver %s can serve stores under %s%s/, and custom resources never store under an undotted prefix (a removed API, or a newer kube-apiserver's)",
		catalog.ReleaseVersion(), s.opts.Prefix, prefix)
	if served == nil {
		why += "; unsure: the API server was not asked, and an older kube-apiserver may still serve it"
	}
	return typeVerdict{state: typeMissing, why: why}
}

// crdNotServing says why a stored CRD is not served, from its own status.
func crdNotServing(crd *apiextensionsv1.CustomResourceDefinition) string {
	if crd == nil {
		return " (its value cannot be decoded here)"
	}
	var why []string
	if crd.DeletionTimestamp != nil {
		why = append(why, "it is being deleted")
	}
	served := false
	for _, v := range crd.Spec.Versions {
		served = served || v.Served
	}
	if !served {
		why = append(why, "no version is served")
	}
	for _, c := range crd.Status.Conditions {
		if (c.Type == apiextensionsv1.Established || c.Type == apiextensionsv1.NamesAccepted) && c.Status != apiextensionsv1.ConditionTrue {
			why = append(why, fmt.Sprintf("%s is %s: %s", c.Type, c.Status, c.Message))
		}
	}
	if len(why) == 0 {
		return " (not yet established, or the API server lags)"
	}
	sort.Strings(why)
	return ": " + strings.Join(why, "; ")
}

// forKind finds the resource of a group and kind (an owner reference's),
// from discovery, the release catalog or the CRDs in etcd.
func (s *scan) forKind(group, kind string) (catalog.Resource, bool) {
	return s.types.ForKind(group, kind)
}

// serverRelease says how the API server's release compares with the
// catalog's: "newer" or "older" (it may store types the catalog does not
// know, or lack some it knows), or "" when it is the same minor release or
// its version is unknown (not asked, or a build with no version stamped in,
// which reports v0.0.0).
func (s *scan) serverRelease() string {
	// Asked of every object: the versions are parsed once, when the scan
	// is made.
	if !s.releaseKnown {
		return compareRelease(s.opts.ServerVersion)
	}
	return s.release
}

// compareRelease compares an API server version with the catalog's
// release, as serverRelease says.
func compareRelease(server string) string {
	srv, err := version.ParseGeneric(server)
	if err != nil || srv.Major() == 0 {
		return ""
	}
	rel, err := version.ParseGeneric(catalog.ReleaseVersion())
	if err != nil {
		return ""
	}
	switch {
	case srv.Major() > rel.Major() || (srv.Major() == rel.Major() && srv.Minor() > rel.Minor()):
		return "newer"
	case srv.Major() < rel.Major() || (srv.Major() == rel.Major() && srv.Minor() < rel.Minor()):
		return "older"
	}
	return ""
}

// servesVersion reports whether the API server's discovery serves the
// resource stored under prefix at group/version gv: it then reads objects
// stored at that version, whatever this release's scheme knows.
func (s *scan) servesVersion(prefix string, gv schema.GroupVersion) bool {
	if s.opts.Served == nil {
		return false
	}
	rs, _ := s.opts.Served.Lookup(prefix)
	for _, r := range rs {
		if r.Group == gv.Group && r.Version == gv.Version {
			return true
		}
	}
	return false
}
