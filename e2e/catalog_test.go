package e2e

import (
	"context"
	"encoding/json"
	"os"
	"reflect"
	"testing"

	"github.com/regghost/regghost/pkg/apiview"
	"github.com/regghost/regghost/pkg/catalog"
)

// TestBuiltinCatalogMatchesAPIServer checks the embedded catalog, used when
// the API server is down, against a live kube-apiserver's discovery.
// REGGHOST_UPDATE_CATALOG=1 (make catalog) rewrites it instead.
func TestBuiltinCatalogMatchesAPIServer(t *testing.T) {
	c := startCluster(t, clusterOptions{})
	view, err := apiview.New(c.rest)
	mustNoErr(t, "api view", err)
	cat, err := view.Catalog(context.Background())
	mustNoErr(t, "discover", err)
	live := cat.Resources()
	if os.Getenv("REGGHOST_UPDATE_CATALOG") == "1" {
		b, err := json.MarshalIndent(live, "", "  ")
		mustNoErr(t, "encode", err)
		mustNoErr(t, "write", os.WriteFile("../pkg/catalog/builtin.json", append(b, '\n'), 0o644))
		return
	}
	embedded := catalog.New("embedded", catalog.Builtin(), nil).Resources()
	if !reflect.DeepEqual(live, embedded) {
		t.Errorf("pkg/catalog/builtin.json differs from kube-apiserver %s discovery; run `make catalog`", bins.kubeAPIServer)
	}
}

// TestHealthyClusterHasNoFindings proves the key-to-resource mapping on
// everything a fresh kube-apiserver writes: no key is misread as a ghost,
// with or without the API server.
func TestHealthyClusterHasNoFindings(t *testing.T) {
	c := startCluster(t, clusterOptions{})
	c.createNamespace(t, "app")
	c.createPod(t, "app", "web")
	c.createConfigMap(t, "app", "cfg")
	c.createSecret(t, "app", "creds")
	for _, args := range [][]string{
		{"scan", "-o", "json", "--kubeconfig", c.kubeconfig},
		{"scan", "-o", "json", "--no-api"},
	} {
		out, errOut, code := runBinary(t, "", append(args, c.etcdArgs()...)...)
		if code != 0 {
			t.Errorf("%v: exit %d, want 0: %s\n%s", args, code, errOut, out)
			continue
		}
		rep := decodeReport(t, out)
		assertFindings(t, rep, nil)
		if rep.ScannedKeys < 50 || rep.InternalKeys == 0 {
			t.Errorf("%v: scanned %d keys (%d internal): the bootstrap objects were not all read", args, rep.ScannedKeys, rep.InternalKeys)
		}
	}
}
