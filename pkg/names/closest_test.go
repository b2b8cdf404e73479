package names

import (
	"slices"
	"testing"
)

func TestClosest(t *testing.T) {
	have := []string{"default", "kube-system", "kube-public", "kb-system", "billing", "shop", "web"}
	for _, tc := range []struct {
		name string
		want []string
	}{
		{"kb-sytem", []string{"kb-system"}},
		{"biling", []string{"billing"}},
		{"kube", []string{"kube-public", "kube-system"}},
		{"nosuch", nil},
		{"shop", nil},
	} {
		if got := Closest(have, tc.name, 3); !slices.Equal(got, tc.want) {
			t.Errorf("Closest(%q) = %v, want %v", tc.name, got, tc.want)
		}
	}
}
