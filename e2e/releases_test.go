package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	lifecyclev1alpha1 "k8s.io/api/lifecycle/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/apiview"
	"github.com/regghost/regghost/pkg/catalog"
	"github.com/regghost/regghost/pkg/etcdscan"
)

// kubeRelease is a Kubernetes release whose kube-apiserver,
// kube-controller-manager and kubectl a wrapper module under tools/ builds
// from the module proxy (the rest of the suite runs tools/kube-apiserver's,
// v1.37.2, the release of pkg/catalog/builtin.json).
type kubeRelease struct {
	// version is the k8s.io/kubernetes version the module builds.
	version string
	// dir is the wrapper module.
	dir string
}

// The older releases the matrix runs, as users' clusters do.
var (
	kube134 = kubeRelease{version: "v1.34.4", dir: "tools/kube134"}
	kube136 = kubeRelease{version: "v1.36.3", dir: "tools/kube136"}
)

// releaseBins caches each release's binary paths: kube-apiserver,
// kube-controller-manager, kubectl (built once a release, outside the
// lock); releaseOf maps a test's name to the release useRelease gave it.
// releaseMu guards releaseOf: the tests run in parallel.
var (
	releaseMu   sync.Mutex
	releaseOf   = map[string][3]string{}
	releaseBins sync.Map // dir -> func() ([3]string, error), a sync.OnceValues each
)

// releasePaths builds (once: the Go build cache keeps it, make tools
// filled it) and links release r's binaries.
func releasePaths(r kubeRelease) ([3]string, error) {
	build, _ := releaseBins.LoadOrStore(r.dir, sync.OnceValues(func() ([3]string, error) {
		var paths [3]string
		for i, tool := range []string{"kube-apiserver", "kube-controller-manager", "kubectl"} {
			out, err := goCmd(r.dir, "tool", "-n", tool)
			if err != nil {
				return paths, fmt.Errorf("build %s %s: %v", tool, r.version, err)
			}
			paths[i] = strings.TrimSpace(out)
		}
		return paths, nil
	}))
	return build.(func() ([3]string, error))()
}

// useRelease makes every cluster test t and its subtests start run release
// r's kube-apiserver and kube-controller-manager, and its kubectl (binsFor):
// the suite's flows run unchanged on another release, beside the tests
// that run the tools module's.
func useRelease(t *testing.T, r kubeRelease) {
	t.Helper()
	paths, err := releasePaths(r)
	if err != nil {
		t.Fatal(err)
	}
	releaseMu.Lock()
	defer releaseMu.Unlock()
	releaseOf[t.Name()] = paths
	t.Cleanup(func() {
		releaseMu.Lock()
		defer releaseMu.Unlock()
		delete(releaseOf, t.Name())
	})
}

// binsFor is the binaries test t runs: those of the release useRelease
// gave it or the nearest test above it, else the suite's.
func binsFor(t *testing.T) binaries {
	releaseMu.Lock()
	defer releaseMu.Unlock()
	b, best := bins, -1
	for name, paths := range releaseOf {
		if (t.Name() == name || strings.HasPrefix(t.Name(), name+"/")) && len(name) > best {
			best = len(name)
			b.kubeAPIServer, b.kubeControllerManager, b.kubectl = paths[0], paths[1], paths[2]
		}
	}
	return b
}

// TestKubernetesReleasesV134 and TestKubernetesReleasesV136 run the
// suite's core flows on kube-apiserver and kube-controller-manager v1.34.4
// and v1.36.3 (the rest of the suite runs them on v1.37.2): the seed
// incident's scan, purge and restore and a healthy cluster's keyspace on
// both, the other flows split between them to keep `make test` short. Each
// release is a test of its own, so that it takes a parallel slot as any
// other test does: as the subtests of one test, they queued behind every
// other test and ran last, side by side, with a slot idle.
func TestKubernetesReleasesV134(t *testing.T) {
	runReleaseFlows(t, kube134, flow{"recover", TestRecoverFromSnapshot}, flow{"unstick", TestUnstick})
}

// TestKubernetesReleasesV136: see TestKubernetesReleasesV134.
func TestKubernetesReleasesV136(t *testing.T) {
	runReleaseFlows(t, kube136, flow{"dangling", TestDanglingAPIServiceUnsticksANamespace}, flow{"serve", TestServeExportsToPrometheus})
}

// flow is one of the suite's tests run under an older release's binaries.
type flow struct {
	name string
	run  func(*testing.T)
}

// runReleaseFlows runs the seed flows, then more, in order, under
// release's binaries.
func runReleaseFlows(t *testing.T, release kubeRelease, more ...flow) {
	parallel(t)
	useRelease(t, release)
	seed := []flow{
		{"scan", TestScanFindsExactlyThePlantedGhosts},
		{"purge and restore", TestPurgeAndRestore},
		{"healthy production-shaped cluster", TestProductionShapedClusterIsHealthy},
		{"bootstrap policy", TestBootstrapPolicyTable},
		{"storage table", TestReleaseStorageTable},
	}
	for _, f := range slices.Concat(seed, more) {
		t.Run(f.name, f.run)
	}
}

// TestOlderReleaseKeyspace reads a keyspace kube-apiserver v1.34.4 or
// v1.36.3 wrote, every API of theirs on, with regghost, whose release
// catalog is v1.37.2's:
//
//   - the older release serves no storage prefix v1.37.2 does not (their
//     discoveries compared), and does not serve the type of the object a
//     v1.37.2 kube-apiserver left behind (an EvictionRequest, lifecycle.k8s.io);
//   - through the older API server: no ghost; the EvictionRequest is
//     unserved-now, its reason naming an older release as a cause;
//   - with --no-api (the v1.37.2 catalog alone): no ghost; what the older
//     release stores at a version v1.37.2 cannot decode is a stored-version
//     suspect that says it is unsure;
//   - through a v1.37.2 kube-apiserver started on the same etcd (a control
//     plane half upgraded): no ghost; that same object is stored-version,
//     which that API server cannot read.
func TestOlderReleaseKeyspace(t *testing.T) {
	parallel(t)
	latest := bins.kubeAPIServer
	ctx := context.Background()
	for _, r := range []struct {
		release kubeRelease
		// undecodable are objects the release stores at a version v1.37.2
		// cannot decode, created through its API.
		undecodable []*unstructured.Unstructured
	}{
		{kube134, []*unstructured.Unstructured{{Object: map[string]any{
			// v1.34 serves and stores StorageVersionMigrations at v1alpha1 only.
			"apiVersion": "storagemigration.k8s.io/v1alpha1", "kind": "StorageVersionMigration", "metadata": map[string]any{"name": "configmaps"},
			"spec": map[string]any{"resource": map[string]any{"group": "", "version": "v1", "resource": "configmaps"}},
		}}}},
		{kube136, []*unstructured.Unstructured{{Object: map[string]any{
			// v1.36 stores Workloads at v1alpha2, which v1.37 dropped.
			"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "Workload", "metadata": map[string]any{"name": "train", "namespace": "app"},
			"spec": map[string]any{"podGroupTemplates": []any{map[string]any{"name": "workers", "schedulingPolicy": map[string]any{"basic": map[string]any{}}}}},
		}}}},
	} {
		t.Run(r.release.version, func(t *testing.T) {
			useRelease(t, r.release)
			c := startCluster(t, clusterOptions{apiserverArgs: allAPIs})
			view, err := apiview.New(c.rest)
			mustNoErr(t, "api view", err)
			served, err := view.Catalog(ctx)
			mustNoErr(t, "discover", err)
			for _, res := range builtinOnly(served.Resources()) {
				if _, ok := catalog.Release().Lookup(res.Prefix()); !ok {
					t.Errorf("kube-apiserver %s serves %s (stored under %s/), which %s does not: test what regghost says of it", r.release.version, res.GroupResource(), res.Prefix(), catalog.ReleaseVersion())
				}
			}
			var newer []string
			for _, res := range catalog.Release().Resources() {
				if _, ok := served.Lookup(res.Prefix()); !ok {
					newer = append(newer, res.GroupResource())
				}
			}
			t.Logf("%s serves, kube-apiserver %s does not (every API on): %s", catalog.ReleaseVersion(), r.release.version, strings.Join(newer, ", "))
			if _, ok := served.Lookup("evictionrequests"); ok {
				t.Fatalf("kube-apiserver %s serves evictionrequests: pick another type only %s has", r.release.version, catalog.ReleaseVersion())
			}

			c.createNamespace(t, "app")
			c.createPod(t, "app", "web")
			c.createConfigMap(t, "app", "settings")
			c.createSecret(t, "app", "creds")
			vac := schema.GroupVersionResource{Group: "storage.k8s.io", Version: "v1", Resource: "volumeattributesclasses"}
			_, err = c.dyn.Resource(vac).Create(ctx, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttributesClass",
				"metadata": map[string]any{"name": "fast"}, "driverName": "csi.example.com", "parameters": map[string]any{"iops": "3000"}}}, metav1.CreateOptions{})
			mustNoErr(t, "create VolumeAttributesClass", err)
			undecodable := map[string][]etcdscan.Class{}
			for _, obj := range r.undecodable {
				gv, err := schema.ParseGroupVersion(obj.GetAPIVersion())
				mustNoErr(t, "parse apiVersion", err)
				res, ok := served.ForKind(gv.Group, obj.GetKind())
				if !ok {
					t.Fatalf("kube-apiserver %s does not serve %s", r.release.version, obj.GetKind())
				}
				_, err = c.dyn.Resource(gv.WithResource(res.Resource)).Namespace(obj.GetNamespace()).Create(ctx, obj, metav1.CreateOptions{})
				mustNoErr(t, "create "+obj.GetKind(), err)
				key := "/registry/" + res.Prefix() + "/" + obj.GetName()
				if obj.GetNamespace() != "" {
					key = "/registry/" + res.Prefix() + "/" + obj.GetNamespace() + "/" + obj.GetName()
				}
				undecodable[key] = []etcdscan.Class{etcdscan.ClassStoredVersion}
			}
			// What a v1.37.2 kube-apiserver wrote: a type the older one lacks.
			eviction := "/registry/evictionrequests/app/web"
			c.put(t, eviction, []byte(etcdtest.Encode(t, &lifecyclev1alpha1.EvictionRequest{
				TypeMeta:   metav1.TypeMeta{APIVersion: "lifecycle.k8s.io/v1alpha1", Kind: "EvictionRequest"},
				ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "app", UID: "0b8e3f52-6a43-4c1e-9d8c-1f6d1f0e7a11"},
			})))

			scan := func(t *testing.T, c *cluster, want map[string][]etcdscan.Class, args ...string) *etcdscan.Report {
				t.Helper()
				rep, code := c.scanJSON(t, args...)
				assertFindings(t, rep, want)
				for _, f := range rep.Findings {
					t.Logf("%s: %v: %s", f.Key, f.Classes, f.Reason())
					if f.Ghost {
						t.Errorf("%s is a ghost: %s", f.Key, f.Reason())
					}
				}
				for _, d := range rep.Dangling {
					t.Logf("dangling: %s %s -> %s (%s): %s", d.Key, d.Field, d.Target, d.State, d.Why)
				}
				if code != 0 {
					t.Errorf("scan %v: exit %d, want 0 (no ghost)", args, code)
				}
				return rep
			}
			reasonOf := func(rep *etcdscan.Report, key string) string {
				for _, f := range rep.Findings {
					if f.Key == key {
						return f.Reason()
					}
				}
				return ""
			}
			t.Run("through its own API server", func(t *testing.T) {
				rep := scan(t, c, map[string][]etcdscan.Class{eviction: {etcdscan.ClassUnservedNow}})
				if why := reasonOf(rep, eviction); !strings.Contains(why, "or the API server is an older release than "+catalog.ReleaseVersion()) {
					t.Errorf("the EvictionRequest's reason does not say the API server may be older: %s", why)
				}
			})
			t.Run("without the API server", func(t *testing.T) {
				no := *c
				no.kubeconfig = ""
				rep := scan(t, &no, undecodable)
				for key := range undecodable {
					if why := reasonOf(rep, key); !strings.Contains(why, "unsure: the API server was not asked") {
						t.Errorf("%s: the reason does not say it is unsure: %s", key, why)
					}
				}
			})
			t.Run("through a v1.37.2 API server on the same etcd", func(t *testing.T) {
				upgraded := *c
				// Its watch cache cannot list what it cannot decode: it waits
				// --storage-initialization-timeout (1m) before it is ready.
				upgraded.startAPIServer(t, clusterOptions{apiserverBin: latest, apiserverName: "apiserver-latest",
					apiserverArgs: slices.Concat(allAPIs, []string{"--storage-initialization-timeout", "5s"})})
				rep := scan(t, &upgraded, undecodable)
				for key := range undecodable {
					if why := reasonOf(rep, key); !strings.Contains(why, "the API server cannot read it") {
						t.Errorf("%s: %s", key, why)
					}
				}
			})
		})
	}
}
