package etcdscan

import (
	"reflect"
	"strings"
	"testing"

	"github.com/regghost/regghost/pkg/usage"
)

// TestParseForceables: --force-class's words; a ghost class, a disputed
// one or a word that is no class is a usage error naming the flag.
func TestParseForceables(t *testing.T) {
	forceable := Forceable()
	for _, tc := range []struct {
		name  string
		words []string
		want  []Class
		bad   bool
	}{
		{"none", nil, nil, false},
		{"a suspect class", []string{string(forceable[0])}, forceable[:1], false},
		{"no class", []string{"bogus"}, nil, true},
		{"disputed", []string{string(ClassDisputed)}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseForceables(tc.words)
			if tc.bad {
				if !usage.Is(err) || !strings.HasPrefix(err.Error(), "--force-class: ") {
					t.Fatalf("got %v, %v; want a usage error naming --force-class", got, err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}
