package table

import (
	"reflect"
	"testing"
)

// TestLineCodec: a spilled table line reads back as it was; a cut one is
// an error.
func TestLineCodec(t *testing.T) {
	for _, l := range []tableLine{
		{cells: []string{"kb-system", "Pod", "api-0", "", "3h"}},
		{comment: "namespace kb-system does not exist", isComment: true},
		{comment: "", isComment: true},
	} {
		raw := encodeLine(l)
		got, err := decodeLine(raw)
		if err != nil || !reflect.DeepEqual(got, l) {
			t.Fatalf("%+v read back as %+v, %v", l, got, err)
		}
		for n := range len(raw) {
			if _, err := decodeLine(raw[:n]); err == nil {
				t.Errorf("%+v cut to %d of %d bytes reads back", l, n, len(raw))
			}
		}
	}
}
