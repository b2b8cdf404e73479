package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/regghost/regghost/pkg/apiview"
	"github.com/regghost/regghost/pkg/catalog"
)

// releasesFile is pkg/catalog's table of what each release serves, stores and reads.
const releasesFile = "../pkg/catalog/releases.json"

// TestReleaseStorageTable checks pkg/catalog's table of the release in use
// against the release itself: every built-in resource with the versions its
// kube-apiserver serves with every API on and the version it stores at (from
// discovery), and every group/version/kind its schemes decode (listed by a
// program built in the release's tools module, e2e/testdata/schemes). Each
// resource's storageVersionHash must name exactly one version the release
// decodes the kind at: that proves regghost computes the hash as the
// release does (migrate judges stored objects by it).
// REGGHOST_UPDATE_CATALOG=1 (make catalog) rewrites the release's entry.
func TestReleaseStorageTable(t *testing.T) {
	parallel(t)
	release, dir := releaseInUse(t), "tools/kube-apiserver"
	for _, r := range []kubeRelease{kube134, kube136} {
		if r.version == release {
			dir = r.dir
		}
	}
	decodes := schemeKinds(t, dir)
	c := startCluster(t, clusterOptions{unseeded: true, apiserverArgs: allAPIs})
	view, err := apiview.New(c.rest)
	mustNoErr(t, "api view", err)
	stored, err := view.StoredResources(context.Background(), decodes)
	mustNoErr(t, "discover", err)
	var got []catalog.ReleaseResource
	for _, s := range apiview.SortedStored(stored) {
		if s.Group == promGroup || s.Hash == "" { // not stored: bindings, reviews, tokens
			continue
		}
		if s.Storage == "" {
			t.Errorf("%s.%s: storageVersionHash %s names no version kube-apiserver %s decodes %s at: the hash is not computed as this release does", s.Resource, s.Group, s.Hash, release, s.Kind)
		}
		got = append(got, catalog.ReleaseResource{Group: s.Group, Resource: s.Resource, Kind: s.Kind, Storage: s.Storage, Versions: s.Versions})
	}
	if len(got) < 40 {
		t.Fatalf("discovery named %d stored resources", len(got))
	}
	table := catalog.ReleaseTable{Release: release, Resources: got, Decodes: decodes}
	if os.Getenv("REGGHOST_UPDATE_CATALOG") == "1" {
		// The file as it is now (each release's run adds its own).
		var file struct {
			Releases []catalog.ReleaseTable `json:"releases"`
		}
		raw, err := os.ReadFile(releasesFile)
		mustNoErr(t, "read "+releasesFile, err)
		mustNoErr(t, "decode "+releasesFile, json.Unmarshal(raw, &file))
		file.Releases = slices.DeleteFunc(file.Releases, func(r catalog.ReleaseTable) bool { return r.Release == release })
		file.Releases = append(file.Releases, table)
		slices.SortFunc(file.Releases, func(a, b catalog.ReleaseTable) int { return strings.Compare(a.Release, b.Release) })
		b, err := json.MarshalIndent(file, "", "  ")
		mustNoErr(t, "encode", err)
		mustNoErr(t, "write", os.WriteFile(releasesFile, append(b, '\n'), 0o644))
		return
	}
	want, err := catalog.ReleaseFor(release)
	if err != nil || !reflect.DeepEqual(table, want) {
		g, _ := json.Marshal(table)
		t.Errorf("%s differs from kube-apiserver %s (%v); run `make catalog`:\n%s", releasesFile, release, err, g)
	}
}

// schemeKinds lists what the release of tools module dir decodes from
// storage, by building and running e2e/testdata/schemes in that module.
func schemeKinds(t *testing.T, dir string) []string {
	t.Helper()
	src, err := os.ReadFile("testdata/schemes/main.go.txt")
	mustNoErr(t, "read the schemes program", err)
	prog := filepath.Join(dir, "_schemes") // ignored by ./... and by git
	mustNoErr(t, "mkdir", os.MkdirAll(prog, 0o755))
	t.Cleanup(func() { os.RemoveAll(prog) })
	mustNoErr(t, "write the schemes program", os.WriteFile(filepath.Join(prog, "main.go"), src, 0o644))
	out, err := goCmd(dir, "run", "./_schemes")
	mustNoErr(t, "run the schemes program", err)
	kinds := strings.Fields(out)
	if !slices.IsSorted(kinds) || len(kinds) < 100 {
		t.Fatalf("the schemes program listed %d kinds, unsorted or too few", len(kinds))
	}
	return kinds
}
