package migrate

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/regghost/regghost/pkg/apiview"
	"github.com/regghost/regghost/pkg/catalog"
)

// TestBuiltinJudge judges built-in objects as releases really store and
// decode them (pkg/catalog's tables of v1.34, v1.36 and v1.37).
func TestBuiltinJudge(t *testing.T) {
	table := func(v string) *catalog.ReleaseTable {
		rt, err := catalog.ReleaseFor(v)
		if err != nil {
			t.Fatal(err)
		}
		return &rt
	}
	stored := func(group, resource, kind, at string) apiview.Stored {
		gv := strings.SplitN(at, "/", 2)
		return apiview.Stored{Group: group, Resource: resource, Kind: kind, Storage: at, Hash: apiview.StorageHash(gv[0], gv[1], kind)}
	}
	for _, tc := range []struct {
		name           string
		b              Builtin
		storedAs, kind string
		want           judgement
		why            string
	}{
		{"written by v1.34 at v1beta2, read by a v1.37 server that stores at v1",
			Builtin{Stored: stored("resource.k8s.io", "deviceclasses", "DeviceClass", "resource.k8s.io/v1"), Server: "v1.37.2", Running: table("v1.37")},
			"resource.k8s.io/v1beta2", "DeviceClass", rewrite, "stored at resource.k8s.io/v1beta2, not resource.k8s.io/v1 (the API server's storage version)"},
		{"at the storage version",
			Builtin{Stored: stored("resource.k8s.io", "deviceclasses", "DeviceClass", "resource.k8s.io/v1"), Server: "v1.37.2", Running: table("v1.37")},
			"resource.k8s.io/v1", "DeviceClass", stays, ""},
		{"v1.37 no longer serves storage.k8s.io/v1beta1 but still decodes it",
			Builtin{Stored: stored("storage.k8s.io", "volumeattributesclasses", "VolumeAttributesClass", "storage.k8s.io/v1beta1"), Server: "v1.34.4", Running: table("v1.34"), Target: table("v1.37")},
			"storage.k8s.io/v1beta1", "VolumeAttributesClass", stays, ""},
		{"v1.34 stores at v1alpha1, which no known newer release decodes",
			Builtin{Stored: stored("storagemigration.k8s.io", "storageversionmigrations", "StorageVersionMigration", "storagemigration.k8s.io/v1alpha1"), Server: "v1.34.4", Running: table("v1.34"), Target: table("v1.37")},
			"storagemigration.k8s.io/v1alpha1", "StorageVersionMigration", stuck, "the API server's storage version, which Kubernetes v1.37 does not decode: a rewrite here stores it there again. Way out: delete these objects before the upgrade"},
		{"v1.36 stores Workloads at v1alpha2, which v1.37 does not decode",
			Builtin{Stored: stored("scheduling.k8s.io", "workloads", "Workload", "scheduling.k8s.io/v1alpha2"), Server: "v1.36.3", Running: table("v1.36"), Target: table("v1.37")},
			"scheduling.k8s.io/v1alpha2", "Workload", stuck, "the API server's storage version, which Kubernetes v1.37 does not decode"},
		{"a v1.37 server cannot read what v1.36 stored at v1alpha2",
			Builtin{Stored: stored("scheduling.k8s.io", "workloads", "Workload", "scheduling.k8s.io/v1beta1"), Server: "v1.37.2", Running: table("v1.37")},
			"scheduling.k8s.io/v1alpha2", "Workload", unreadable, "which kube-apiserver v1.37.2 does not decode. Way out:"},
		{"a target without the API server",
			Builtin{Target: table("v1.37")},
			"scheduling.k8s.io/v1alpha2", "Workload", stuck, "whether a rewrite moves it is not known"},
		{"a target without the API server, at a version it decodes",
			Builtin{Target: table("v1.37")},
			"resource.k8s.io/v1beta1", "DeviceClass", stays, ""},
		{"the target reads it where it is, not where a rewrite would store it",
			Builtin{Stored: stored("scheduling.k8s.io", "workloads", "Workload", "scheduling.k8s.io/v1alpha2"), Server: "v1.36.0-custom", Target: table("v1.37")},
			"scheduling.k8s.io/v1beta1", "Workload", stays, ""},
		{"a release between that reads it and stores where the target reads",
			Builtin{Stored: stored("scheduling.k8s.io", "workloads", "Workload", "scheduling.k8s.io/v1alpha1"), Server: "v1.33.0", Target: table("v1.37")},
			"scheduling.k8s.io/v1alpha1", "Workload", stuck, "Way out: delete these objects"},
		{"a storage hash no known release names",
			Builtin{Stored: apiview.Stored{Hash: "AAAAAAAAAAA="}, Server: "v1.40.0"},
			"apps/v1", "Deployment", rewrite, "not the version its storageVersionHash AAAAAAAAAAA= names"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			why, got := tc.b.judge(tc.storedAs, tc.kind)
			if got != tc.want || !strings.Contains(why, tc.why) {
				t.Errorf("judge(%s, %s) = %d %q, want %d containing %q", tc.storedAs, tc.kind, got, why, tc.want, tc.why)
			}
		})
	}
}

// TestJudgeKMS: an object under KMS is judged by where the API server
// stores its resource.
func TestJudgeKMS(t *testing.T) {
	v137, _ := catalog.ReleaseFor("v1.37")
	svm := apiview.Stored{Group: "storagemigration.k8s.io", Resource: "storageversionmigrations", Kind: "StorageVersionMigration", Storage: "storagemigration.k8s.io/v1alpha1"}
	if why := (&Builtin{Stored: svm, Server: "v1.34.4", Target: &v137}).judgeKMS(); !strings.Contains(why, "which Kubernetes v1.37 does not decode") {
		t.Errorf("at v1alpha1: %q", why)
	}
	svm.Storage = "storagemigration.k8s.io/v1beta1"
	if why := (&Builtin{Stored: svm, Server: "v1.36.3", Target: &v137}).judgeKMS(); why != "" {
		t.Errorf("at v1beta1: %q", why)
	}
	if why := (&Builtin{Target: &v137}).judgeKMS(); !strings.Contains(why, "is not known") {
		t.Errorf("not asked: %q", why)
	}
}

// TestJudgeBuiltinRefusesATargetForACRD: a CRD's versions are its own.
func TestJudgeBuiltinRefusesATargetForACRD(t *testing.T) {
	tg := Target{Resource: schema.GroupResource{Group: "example.com", Resource: "widgets"}, CRD: &apiextensionsv1.CustomResourceDefinition{}}
	if err := JudgeBuiltin(t.Context(), &tg, nil, "", "v1.37"); err == nil || !strings.Contains(err.Error(), "--target-release judges built-in resources") {
		t.Errorf("err = %v", err)
	}
	b := Target{}
	if err := JudgeBuiltin(t.Context(), &b, nil, "", "v1.99"); err == nil || !strings.Contains(err.Error(), "regghost knows v1.34, v1.36, v1.37") {
		t.Errorf("unknown release: %v", err)
	}
	if err := JudgeBuiltin(t.Context(), &b, nil, "no kubeconfig", ""); err != nil || b.Builtin == nil || b.Builtin.Asked || b.Builtin.NotAsked != "no kubeconfig" {
		t.Errorf("no API server and no target: %v, %+v", err, b.Builtin)
	}
}
