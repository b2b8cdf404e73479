package recovery

import (
	"strings"
	"testing"
)

// TestSelectionComplete: "crd" and "crds" name the CRDs' resource, a
// label selector is parsed, and a bad one is refused naming the flag.
func TestSelectionComplete(t *testing.T) {
	for _, tt := range []struct {
		resource, selector, want, refused string
	}{
		{resource: "crd", want: "customresourcedefinitions"},
		{resource: "CRDs", want: "customresourcedefinitions"},
		{resource: "secrets", selector: "app=web", want: "secrets"},
		{resource: "secrets", selector: "app in (", refused: `--selector "app in ("`},
	} {
		s := Selection{Resource: tt.resource}
		err := s.Complete(tt.selector)
		switch {
		case tt.refused != "":
			if err == nil || !strings.HasPrefix(err.Error(), tt.refused) {
				t.Errorf("%q %q: %v, want %s", tt.resource, tt.selector, err, tt.refused)
			}
		case err != nil || s.Resource != tt.want || (tt.selector != "") != (s.Selector != nil):
			t.Errorf("%q %q: resource %q, selector %v, err %v", tt.resource, tt.selector, s.Resource, s.Selector, err)
		}
	}
}

// TestParseAccepted: every --accept-impact word, the old name too; an
// unknown one is refused naming those it may be.
func TestParseAccepted(t *testing.T) {
	got, err := ParseAccepted([]string{"storage-deleted"})
	if err != nil || !got[StorageDeleted] || len(got) != 1 {
		t.Errorf("ParseAccepted: %v, %v", got, err)
	}
	if _, err := ParseAccepted([]string{"everything"}); err == nil || !strings.Contains(err.Error(), AcceptableNames()) {
		t.Errorf("an unknown impact: %v", err)
	}
}
