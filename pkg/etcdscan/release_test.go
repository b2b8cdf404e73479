package etcdscan

import (
	"context"
	"strings"
	"testing"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/catalog"
)

func TestServerRelease(t *testing.T) {
	for _, tt := range []struct{ server, want string }{
		{"", ""},
		{"v0.0.0-master+$Format:%H$", ""}, // built with no version stamped in
		{"not a version", ""},
		{catalog.ReleaseVersion(), ""},
		{"v1.34.4", "older"},
		{"v1.36.3-eks-1a2b3c", "older"},
		{"v1.99.0", "newer"},
		{"v2.0.0", "newer"},
	} {
		s := &scan{opts: Options{ServerVersion: tt.server}}
		if got := s.serverRelease(); got != tt.want {
			t.Errorf("server %q against catalog %s: %q, want %q", tt.server, catalog.ReleaseVersion(), got, tt.want)
		}
	}
}

// TestScanOfflineOlderReleaseIsUnsure: without the API server, what the
// release catalog does not know may be an older kube-apiserver's. A version
// this release cannot decode is a stored-version suspect that says so, and
// a removed API's object a single-witness ghost that says so.
func TestScanOfflineOlderReleaseIsUnsure(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	ctx := context.Background()
	svm := "/registry/storageversionmigrations/m1"
	psp := "/registry/podsecuritypolicy/old"
	for k, v := range map[string]string{
		"/registry/namespaces/default": encode(t, namespace("default")),
		// kube-apiserver v1.34 stores StorageVersionMigrations at v1alpha1.
		svm: `{"apiVersion":"storagemigration.k8s.io/v1alpha1","kind":"StorageVersionMigration","metadata":{"name":"m1"}}`,
		psp: `{"apiVersion":"policy/v1beta1","kind":"PodSecurityPolicy","metadata":{"name":"old"}}`,
	} {
		if _, err := cli.Put(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	store, err := NewEtcdStore(ctx, cli, 10)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Scan(ctx, store, Options{APIUnavailable: "--no-api given"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		class        Class
		ghost        bool
		reasonSubstr string
	}{
		svm: {ClassStoredVersion, false, "unsure: the API server was not asked; kube-apiserver " + catalog.ReleaseVersion() + " and newer cannot read it"},
		psp: {ClassUnservedType, true, "unsure: the API server was not asked, and an older kube-apiserver may still serve it"},
	}
	if len(rep.Findings) != len(want) {
		t.Errorf("findings %+v", rep.Findings)
	}
	for _, f := range rep.Findings {
		w := want[f.Key]
		if len(f.Classes) != 1 || f.Classes[0] != w.class || f.Ghost != w.ghost || f.SingleWitness != w.ghost || !strings.Contains(f.Reason(), w.reasonSubstr) {
			t.Errorf("%s: classes %v ghost %v single %v (%s), want %s ghost %v saying %q", f.Key, f.Classes, f.Ghost, f.SingleWitness, f.Reason(), w.class, w.ghost, w.reasonSubstr)
		}
	}
}
