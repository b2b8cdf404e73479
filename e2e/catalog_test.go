package e2e

import (
	"context"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/regghost/regghost/pkg/apiview"
	"github.com/regghost/regghost/pkg/catalog"
)

// allAPIs are the kube-apiserver flags that turn on every group/version and
// feature gate it has: what the release can serve, enabled by default or not.
var allAPIs = []string{"--runtime-config", "api/all=true", "--feature-gates", "AllAlpha=true,AllBeta=true"}

// TestBuiltinCatalogMatchesAPIServer checks the embedded release catalog,
// used when the API server cannot be asked, against the discovery of a
// kube-apiserver with every API on and one with the defaults.
// REGGHOST_UPDATE_CATALOG=1 (make catalog) rewrites it instead.
func TestBuiltinCatalogMatchesAPIServer(t *testing.T) {
	parallel(t)
	discover := func(args []string) []catalog.Resource {
		c := startCluster(t, clusterOptions{apiserverArgs: args})
		view, err := apiview.New(c.rest)
		mustNoErr(t, "api view", err)
		cat, err := view.Catalog(context.Background())
		mustNoErr(t, "discover", err)
		if failed := cat.FailedGroups(); len(failed) > 0 {
			t.Fatalf("discovery failed for %v", failed)
		}
		return builtinOnly(cat.Resources())
	}
	// A kube-apiserver built from the module proxy has no version stamped in:
	// the release is the k8s.io/kubernetes version the tools module builds.
	out, err := goCmd("tools/kube-apiserver", "list", "-m", "-f", "{{.Version}}", "k8s.io/kubernetes")
	mustNoErr(t, "kubernetes version", err)
	version := strings.TrimSpace(out)
	all := discover(allAPIs)
	defaults := discover(nil)
	byDefault := map[string]bool{}
	for _, r := range defaults {
		byDefault[r.Group+"/"+r.Resource] = true
	}
	for i := range all {
		all[i].OffByDefault = !byDefault[all[i].Group+"/"+all[i].Resource]
	}
	if os.Getenv("REGGHOST_UPDATE_CATALOG") == "1" {
		b, err := json.MarshalIndent(map[string]any{"kubeAPIServer": version, "resources": all}, "", "  ")
		mustNoErr(t, "encode", err)
		mustNoErr(t, "write", os.WriteFile("../pkg/catalog/builtin.json", append(b, '\n'), 0o644))
		return
	}
	embedded := catalog.Release().Resources()
	if !reflect.DeepEqual(all, embedded) || catalog.ReleaseVersion() != version {
		t.Errorf("pkg/catalog/builtin.json differs from kube-apiserver %s (%s) discovery; run `make catalog`", version, bins.kubeAPIServer)
	}
	for _, r := range defaults {
		if _, ok := catalog.Release().Lookup(r.Prefix()); !ok {
			t.Errorf("%s is served by default but not in the release catalog", r.GroupResource())
		}
	}
}
