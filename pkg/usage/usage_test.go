package usage

import (
	"errors"
	"fmt"
	"testing"
)

type own struct{}

func (own) Error() string { return "own" }
func (own) Usage()        {}

func TestIs(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"plain", errors.New("etcd is down"), false},
		{"Errorf", Errorf("--top must be 0 or more, got %d", -1), true},
		{"wrapped", fmt.Errorf("leases: %w", Errorf("too short")), true},
		{"Mark", Mark(errors.New("bad")), true},
		{"a package's own type", fmt.Errorf("x: %w", own{}), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Is(tc.err); got != tc.want {
				t.Errorf("Is(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
	if Mark(nil) != nil {
		t.Error("Mark(nil) is not nil")
	}
	if err := Errorf("a %w", errors.ErrUnsupported); !errors.Is(err, errors.ErrUnsupported) || err.Error() != "a unsupported operation" {
		t.Errorf("Errorf: %v", err)
	}
}
