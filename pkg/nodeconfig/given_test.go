package nodeconfig

import (
	"reflect"
	"testing"
)

// changed is a FlagSet: the flags set so far.
type changed map[string]bool

func (c changed) Changed(name string) bool { return c[name] }

// TestGivenBy: a setting given on the command line is named by its flag;
// one set after (by its ETCDCTL_* variable) by the variable; one never set
// is not given.
func TestGivenBy(t *testing.T) {
	fs := changed{FlagEndpoints: true}
	given := GivenBy(fs, "ETCDCTL")
	fs[FlagCACert] = true
	want := Given{FlagEndpoints: "--endpoints", FlagCACert: "ETCDCTL_CACERT"}
	if got := given(); !reflect.DeepEqual(got, want) {
		t.Errorf("given: %v, want %v", got, want)
	}
}
