package catalog

import (
	"strings"
	"testing"
)

func TestMinor(t *testing.T) {
	for in, want := range map[string]string{
		"v1.37.2": "v1.37", "1.37": "v1.37", "v1.37.0-rc.1": "v1.37", "v1.37": "v1.37", " v1.34.4 ": "v1.34",
		"v1.37+k3s1": "v1.37", "": "", "latest": "", "v1": "", "v.1": "", "vx.1": "", "v0.0.0-master+$Format:%H$": "",
	} {
		if got := Minor(in); got != want {
			t.Errorf("Minor(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestReleaseFor(t *testing.T) {
	for _, tc := range []struct{ in, release, err string }{
		{"v1.37.0", "v1.37.2", ""},
		{"1.34", "v1.34.4", ""},
		{"v1.35", "", "no table of what Kubernetes v1.35 serves: regghost knows v1.34, v1.36, v1.37"},
		{"soon", "", `"soon" is not a Kubernetes version`},
	} {
		got, err := ReleaseFor(tc.in)
		if got.Release != tc.release || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("ReleaseFor(%q) = %q, %v; want %q, %q", tc.in, got.Release, err, tc.release, tc.err)
		}
	}
	rt, _ := ReleaseFor("v1.37")
	if !rt.Reads("v1", "Pod") || !rt.Reads("storage.k8s.io/v1beta1", "VolumeAttributesClass") || rt.Reads("scheduling.k8s.io/v1alpha2", "Workload") {
		t.Errorf("v1.37's decodes are wrong")
	}
	if s, ok := rt.StorageOf("", "pods"); !ok || s != "v1" {
		t.Errorf("StorageOf(pods) = %q, %v", s, ok)
	}
}

func TestCompareMinorAndBetween(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{{"v1.34.4", "v1.37", -1}, {"v1.37.2", "1.37.0", 0}, {"v1.100", "v1.37", 1}, {"v0.0.0-master", "v1.1", -1}} {
		if got := CompareMinor(tc.a, tc.b); got != tc.want {
			t.Errorf("CompareMinor(%s, %s) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
	if got := strings.Join(MinorsBetween("v1.34.4", "v1.37"), " "); got != "v1.35 v1.36" {
		t.Errorf("MinorsBetween = %q", got)
	}
	if got := MinorsBetween("v1.37.2", "v1.38"); got != nil {
		t.Errorf("MinorsBetween next = %q", got)
	}
	var last string
	for _, r := range Releases() {
		if last != "" && CompareMinor(last, r.Release) >= 0 {
			t.Errorf("Releases() not oldest first: %s before %s", last, r.Release)
		}
		last = r.Release
	}
}
