package image

import (
	"os"
	"strings"
	"testing"
)

// TestLicenseIsTheRepositorys: the license the image's annotations name is
// the one in the LICENSE file the release archives carry.
func TestLicenseIsTheRepositorys(t *testing.T) {
	b, err := os.ReadFile("../../LICENSE")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(string(b)), " ")
	want := map[string]string{"Apache-2.0": "Apache License Version 2.0, January 2004"}[License]
	if want == "" || !strings.HasPrefix(text, want) {
		t.Errorf("the image says its license is %q; LICENSE begins %q", License, text[:min(len(text), 60)])
	}
}
