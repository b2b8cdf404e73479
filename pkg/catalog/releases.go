package catalog

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// releasesJSON holds, for each kube-apiserver release the e2e suite builds,
// every built-in resource with the versions that release serves with every
// group/version and feature gate on and the version it stores the resource
// at (matched from discovery's storageVersionHash), and every
// group/version/kind its schemes decode from storage (a version no longer
// served may still be read). `make catalog` writes it; the e2e suite checks it
// against each release's discovery.
//
//go:embed releases.json
var releasesJSON []byte

// ReleaseResource is one built-in resource as a release serves and stores it.
type ReleaseResource struct {
	Group    string `json:"group"`
	Resource string `json:"resource"`
	Kind     string `json:"kind"`
	// Storage is the group/version the release stores it at.
	Storage string `json:"storage"`
	// Versions are the versions of Group the release serves it at, every
	// API on.
	Versions []string `json:"versions"`
}

// ReleaseTable is what one release serves and stores.
type ReleaseTable struct {
	// Release is the kube-apiserver version the table was read from.
	Release   string            `json:"release"`
	Resources []ReleaseResource `json:"resources"`
	// Decodes are the "group/version/Kind"s its schemes read from storage.
	Decodes []string `json:"decodes"`
}

var loadReleases = sync.OnceValue(func() []ReleaseTable {
	var f struct {
		Releases []ReleaseTable `json:"releases"`
	}
	if err := json.Unmarshal(releasesJSON, &f); err != nil || len(f.Releases) == 0 {
		panic(fmt.Sprintf("catalog: embedded releases.json is invalid: %v", err))
	}
	slices.SortFunc(f.Releases, func(a, b ReleaseTable) int { return CompareMinor(a.Release, b.Release) })
	return f.Releases
})

// Releases are the tables of every release regghost knows, oldest first.
func Releases() []ReleaseTable { return slices.Clone(loadReleases()) }

// Minor is the "v1.37" of a version written as v1.37.2, 1.37, or v1.37.0-rc.1;
// "" when it is not a version (a kube-apiserver built without its version
// stamped says v0.0.0-master).
func Minor(version string) string {
	v := strings.TrimPrefix(strings.TrimSpace(version), "v")
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 || strings.TrimLeft(parts[0], "0") == "" || strings.Trim(parts[0], "0123456789") != "" {
		return ""
	}
	minor := parts[1]
	if i := strings.IndexFunc(minor, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		minor = minor[:i]
	}
	if minor == "" {
		return ""
	}
	return "v" + parts[0] + "." + minor
}

// ReleaseFor is the table of the release with version's major and minor
// (patch releases do not change what is served or stored).
func ReleaseFor(version string) (ReleaseTable, error) {
	want := Minor(version)
	if want == "" {
		return ReleaseTable{}, fmt.Errorf("%q is not a Kubernetes version (v1.37 or v1.37.2)", version)
	}
	var known []string
	for _, t := range loadReleases() {
		if Minor(t.Release) == want {
			return t, nil
		}
		known = append(known, Minor(t.Release))
	}
	return ReleaseTable{}, fmt.Errorf("no table of what Kubernetes %s serves: regghost knows %s", want, strings.Join(known, ", "))
}

// Reads reports whether the release decodes an object of kind stored at
// groupVersion.
func (t ReleaseTable) Reads(groupVersion, kind string) bool {
	_, found := slices.BinarySearch(t.Decodes, GVKString(groupVersion, kind))
	return found
}

// GVKString is how Decodes names a kind at a group/version ("v1" is the core group's).
func GVKString(groupVersion, kind string) string {
	if !strings.Contains(groupVersion, "/") {
		groupVersion = "/" + groupVersion
	}
	return groupVersion + "/" + kind
}

// StorageOf is the group/version the release stores a resource at.
func (t ReleaseTable) StorageOf(group, resource string) (string, bool) {
	for _, r := range t.Resources {
		if r.Group == group && r.Resource == resource {
			return r.Storage, r.Storage != ""
		}
	}
	return "", false
}

// CompareMinor compares two versions by major and minor (-1, 0, 1); a
// version that does not parse sorts first.
func CompareMinor(a, b string) int {
	pa, pb := minorParts(a), minorParts(b)
	for i := range pa {
		if pa[i] != pb[i] {
			if pa[i] < pb[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}

// MinorsBetween are the minor releases strictly between from and to
// ("v1.35", "v1.36" between v1.34 and v1.37).
func MinorsBetween(from, to string) []string {
	pf, pt := minorParts(from), minorParts(to)
	var out []string
	if pf[0] != pt[0] || pf[0] == 0 {
		return nil
	}
	for m := pf[1] + 1; m < pt[1]; m++ {
		out = append(out, fmt.Sprintf("v%d.%d", pf[0], m))
	}
	return out
}

func minorParts(v string) [2]int {
	var p [2]int
	if m := Minor(v); m != "" {
		fmt.Sscanf(m, "v%d.%d", &p[0], &p[1])
	}
	return p
}
