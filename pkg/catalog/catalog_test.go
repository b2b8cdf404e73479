package catalog

import "testing"

func TestResourceFor(t *testing.T) {
	c := New("test", Builtin(), nil)
	tests := []struct {
		prefix, group, resource string
	}{
		{"secrets", "", "secrets"},
		{"services/specs", "", "services"},
		{"minions", "", "nodes"},
		{"deployments", "apps", "deployments"},
		{"example.com/widgets", "example.com", "widgets"},
		{"unknownthings", "", "unknownthings"},
	}
	for _, tt := range tests {
		r := c.ResourceFor(tt.prefix)
		if r.Group != tt.group || r.Resource != tt.resource {
			t.Errorf("%s: got %s/%s, want %s/%s", tt.prefix, r.Group, r.Resource, tt.group, tt.resource)
		}
		if got := r.Prefix(); got != tt.prefix {
			t.Errorf("%s: round trip gives prefix %s", tt.prefix, got)
		}
	}
}
