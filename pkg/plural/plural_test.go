package plural

import "testing"

func TestOf(t *testing.T) {
	for _, c := range []struct {
		n          int
		noun, want string
	}{
		{0, "key", "0 keys"},
		{1, "key", "1 key"},
		{2, "key", "2 keys"},
		{1, "entry", "1 entry"},
		{3, "entry", "3 entries"},
		{2, "key ID", "2 key IDs"},
		{2, "day", "2 days"},
		{2, "APIService", "2 APIServices"},
	} {
		if got := Of(c.n, c.noun); got != c.want {
			t.Errorf("Of(%d, %q) = %q, want %q", c.n, c.noun, got, c.want)
		}
	}
	if got := Verb(1, "object", "is", "are"); got != "1 object is" {
		t.Errorf("Verb(1) = %q", got)
	}
	if got := Verb(2, "object", "is", "are"); got != "2 objects are" {
		t.Errorf("Verb(2) = %q", got)
	}
	if got := Pick(1, "its group", "their groups") + ", " + Pick(int64(2), "its group", "their groups"); got != "its group, their groups" {
		t.Errorf("Pick = %q", got)
	}
}
