package diskroom

import (
	"strings"
	"testing"
)

func TestReserve(t *testing.T) {
	for _, tc := range []struct{ total, want uint64 }{
		{0, 1 << 30},
		{4 << 30, 1 << 30},
		{100 << 30, 10 << 30},
	} {
		if got := Reserve(tc.total); got != tc.want {
			t.Errorf("Reserve(%d) = %d, want %d", tc.total, got, tc.want)
		}
	}
}

func TestFits(t *testing.T) {
	r := Room{Dir: "/x", Free: 3 << 30, Keep: 1 << 30}
	for _, tc := range []struct {
		need uint64
		want bool
	}{{0, true}, {2 << 30, true}, {2<<30 + 1, false}, {4 << 30, false}} {
		if got := r.Fits(tc.need); got != tc.want {
			t.Errorf("Fits(%d) = %v, want %v", tc.need, got, tc.want)
		}
	}
	if s := r.String(); !strings.Contains(s, "/x has 3072 MiB free and must keep 1024 MiB") {
		t.Errorf("String() = %q", s)
	}
}

func TestOf(t *testing.T) {
	r, err := Of(t.TempDir())
	if err != nil || r.Keep < 1<<30 {
		t.Fatalf("Of: %+v, %v", r, err)
	}
	if _, err := Of("/does/not/exist"); err == nil || !strings.Contains(err.Error(), "/does/not/exist") {
		t.Fatalf("Of a missing dir: %v", err)
	}
}
