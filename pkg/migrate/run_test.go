package migrate

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestVerdictsSpeakForOneResource: a key the configuration also reads
// other resources with may go for this resource only, and says which
// others it reads; a key still holding objects or old revisions never may.
func TestVerdictsSpeakForOneResource(t *testing.T) {
	secrets := Target{Resource: schema.GroupResource{Resource: "secrets"}}
	proof := &Census{Target: secrets, Writer: "aescbc/key2", Readers: []string{"aescbc/key2", "aescbc/key1", "identity"},
		ReadBy: map[string][]string{"aescbc/key2": {"secrets"}, "aescbc/key1": {"secrets", "configmaps", "*.*"}, "identity": {"secrets"}},
		ByKey:  map[string]int{"aescbc/key2": 3}}
	for _, tc := range []struct {
		name    string
		h       *History
		herr    error
		mayGo   map[string]bool
		also    string
		compact int64
	}{
		{"history read, empty", &History{ByKey: map[string]int{}}, nil, map[string]bool{"aescbc/key1": true, "identity": true}, "[configmaps *.*]", 0},
		{"old revisions", &History{ByKey: map[string]int{"aescbc/key1": 2}, Newest: 42}, nil, map[string]bool{"identity": true}, "[configmaps *.*]", 42},
		{"history not read", nil, fmt.Errorf("etcd 3.5.9 may say"), map[string]bool{}, "[configmaps *.*]", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Verdicts(proof, proof, tc.h, tc.herr)
			if len(v) != 2 {
				t.Fatalf("verdicts %+v", v)
			}
			for _, k := range v {
				if k.MayGo != tc.mayGo[k.Key] {
					t.Errorf("%s: may go %v", k.Key, k.MayGo)
				}
				if k.Key == "aescbc/key1" && (fmt.Sprint(k.AlsoReads) != tc.also || k.CompactAt != tc.compact) {
					t.Errorf("key1: %+v", k)
				}
				if k.Key == "identity" && k.PlaintextOnDisk != k.MayGo {
					t.Errorf("identity may go (%v) without saying its plaintext is still on disk (%v)", k.MayGo, k.PlaintextOnDisk)
				}
				if k.Key != "identity" && k.PlaintextOnDisk {
					t.Errorf("%s says plaintext is on disk", k.Key)
				}
				if k.Key == "identity" && len(k.AlsoReads) != 0 {
					t.Errorf("identity also reads %v", k.AlsoReads)
				}
			}
		})
	}
}

// TestOnlyPlannedByKeyAndUID: after a stranded version is listed again,
// only the objects the confirmed plan named are rewritten: not one created
// again under a planned name, not one the plan could not read.
func TestOnlyPlannedByKeyAndUID(t *testing.T) {
	plan := &Census{Rewrite: []Object{{Key: "/r/a", UID: "1"}, {Key: "/r/b", UID: "2"}}, Unreadable: []Object{{Key: "/r/c"}}}
	again := &Census{Rewrite: []Object{{Key: "/r/a", UID: "1"}, {Key: "/r/b", UID: "9"}, {Key: "/r/c", UID: "3"}, {Key: "/r/d", UID: "4"}}}
	got := onlyPlanned(again, plan)
	if len(got.Rewrite) != 1 || got.Rewrite[0].Key != "/r/a" {
		t.Errorf("rewrite %+v", got.Rewrite)
	}
}

// TestNarrowsOnlyWhenAskedOrStranded: status.storedVersions is narrowed
// when asked, or when a stranded version it holds must leave spec.versions.
func TestNarrowsOnlyWhenAskedOrStranded(t *testing.T) {
	crd := func(stored ...string) *apiextensionsv1.CustomResourceDefinition {
		c := &apiextensionsv1.CustomResourceDefinition{}
		c.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true}}
		c.Status.StoredVersions = stored
		return c
	}
	gr := schema.GroupResource{Group: "example.com", Resource: "widgets"}
	for _, tc := range []struct {
		name   string
		crd    *apiextensionsv1.CustomResourceDefinition
		stored map[string]int
		asked  bool
		want   bool
	}{
		{"asked", crd("v1beta1", "v1"), map[string]int{"example.com/v1": 1}, true, true},
		{"not asked", crd("v1beta1", "v1"), map[string]int{"example.com/v1": 1}, false, false},
		{"stranded, not in storedVersions", crd("v1"), map[string]int{"example.com/v1beta1": 1}, false, false},
		{"stranded, in storedVersions", crd("v1beta1", "v1"), map[string]int{"example.com/v1alpha1": 1, "example.com/v1beta1": 1}, false, true},
		{"built in", nil, nil, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Census{Target: Target{Resource: gr, Version: "v1", CRD: tc.crd}, ByVersion: tc.stored}
			if tc.crd == nil {
				c.Target.CRD = nil
			}
			if got := Narrows(c, tc.asked); got != tc.want {
				t.Errorf("Narrows = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestProgressTrustedVersion: old revisions are counted only on an etcd
// whose progress notification follows every event it covers.
func TestProgressTrustedVersion(t *testing.T) {
	for v, ok := range map[string]bool{"3.5.12": false, "3.5.13": true, "3.5.26": true, "3.4.30": false, "3.4.31": true,
		"3.6.0": true, "3.7.0-alpha.0": true, "3.3.25": false, "": false} {
		err := progressTrustedVersion(v)
		if (err == nil) != ok {
			t.Errorf("%q: %v", v, err)
		}
		if err != nil && strings.Contains(err.Error(), "  ") {
			t.Errorf("%q: %v", v, err)
		}
	}
}

// versions is a statuser whose endpoints say the etcd releases given
// ("": it does not answer).
type versions map[string]string

func (v versions) Endpoints() []string { return slices.Sorted(maps.Keys(v)) }

func (v versions) Status(_ context.Context, ep string) (*clientv3.StatusResponse, error) {
	if v[ep] == "" {
		return nil, fmt.Errorf("connection refused")
	}
	return &clientv3.StatusResponse{Version: v[ep]}, nil
}

// TestProgressTrustedOnEveryEndpoint: during a rolling upgrade the watch
// may be served by any endpoint, so every one is judged: an older member
// beside a newer one, or one that does not answer, means the old
// revisions are not counted (never "may go" from a replay that may have
// ended early).
func TestProgressTrustedOnEveryEndpoint(t *testing.T) {
	for _, tc := range []struct {
		name string
		eps  versions
		want string
	}{
		{"all fixed", versions{"https://a:2379": "3.5.16", "https://b:2379": "3.5.13"}, ""},
		{"an older member second", versions{"https://a:2379": "3.5.16", "https://b:2379": "3.5.12"}, "etcd at https://b:2379: etcd 3.5.12 may say"},
		{"an older member first", versions{"https://a:2379": "3.5.12", "https://b:2379": "3.5.16"}, "etcd at https://a:2379: etcd 3.5.12 may say"},
		{"one silent", versions{"https://a:2379": "3.5.16", "https://b:2379": ""}, "did not say its version at https://b:2379"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := progressTrusted(context.Background(), tc.eps)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// TestRunRefusesWhatItCannotProve: an interrupt before the first step
// changes nothing; --prune-stored-versions with objects whose version is
// not read here (KMS) says it did not narrow, rather than ending quietly.
func TestRunRefusesWhatItCannotProve(t *testing.T) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	crd.Name = "widgets.example.com"
	crd.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true}}
	crd.Status.StoredVersions = []string{"v1beta1", "v1"}
	c := &Census{Target: Target{Resource: schema.GroupResource{Group: "example.com", Resource: "widgets"}, Version: "v1", CRD: crd},
		ByVersion: map[string]int{}, NotChecked: 2}
	stop := make(chan struct{})
	close(stop)
	if _, err := Run(context.Background(), c, Options{Rewrite: RewriteOptions{Stop: stop}}); err == nil || !strings.Contains(err.Error(), "nothing was changed") {
		t.Errorf("interrupted: %v", err)
	}
	res := &Result{Proof: c}
	if err := res.finish(context.Background(), c, Options{PruneStoredVersions: true}); err == nil || !strings.Contains(err.Error(), "was not narrowed") {
		t.Errorf("prune with KMS objects: %v", err)
	}
	if err := res.finish(context.Background(), c, Options{}); err != nil {
		t.Errorf("not asked to prune: %v", err)
	}
}

// TestUnmovedRefusesAnotherWritersChange: each edit of the CRD is
// preconditioned on the revision regghost last left it at; another
// writer's change in between is refused and recorded, so a restore never
// puts the backup back over it.
func TestUnmovedRefusesAnotherWritersChange(t *testing.T) {
	c := &Census{Target: Target{CRD: &apiextensionsv1.CustomResourceDefinition{}, CRDRevision: 12}}
	c.Target.CRD.Name = "gadgets.example.com"
	var moved []string
	res := &Result{crdRev: 12, moved: func(d string) { moved = append(moved, d) }}
	if err := res.unmoved(c, "narrow status.storedVersions"); err != nil || len(moved) != 0 {
		t.Errorf("as regghost left it: %v, %v", err, moved)
	}
	res.crdRev = 10
	err := res.unmoved(c, "narrow status.storedVersions")
	if err == nil || !strings.Contains(err.Error(), "changed by someone else at revision 12, after regghost left it at revision 10") || len(moved) != 1 {
		t.Errorf("changed since: %v, %v", err, moved)
	}
	if err := (&Result{}).unmoved(c, "x"); err != nil {
		t.Errorf("unprotected: %v", err)
	}
}
