package history

import (
	"reflect"
	"testing"
)

func TestParseArgs(t *testing.T) {
	const reg = "/registry/"
	for _, tc := range []struct {
		name      string
		namespace string
		args      []string
		sel       Selection
		target    []string
	}{
		{name: "namespace only", namespace: "kb", sel: Selection{Registry: reg, Namespace: "kb"}},
		{name: "a whole key", args: []string{"/registry/pods/kb/web"}, sel: Selection{Registry: reg, Key: "/registry/pods/kb/web"}},
		{name: "a key under the registry", args: []string{"pods/kb/web"}, sel: Selection{Registry: reg, Key: "/registry/pods/kb/web"}},
		{name: "a prefix", args: []string{"pods/kb/"}, sel: Selection{Registry: reg, Prefix: "/registry/pods/kb/"}},
		{name: "a whole prefix", args: []string{"/registry/pods/"}, sel: Selection{Registry: reg, Prefix: "/registry/pods/"}},
		{name: "TYPE/NAME is an object, its namespace -n", namespace: "kb", args: []string{"pod/web"}, sel: Selection{Registry: reg}, target: []string{"pod/web"}},
		{name: "TYPE NAME is an object", args: []string{"configmap", "cfg"}, sel: Selection{Registry: reg}, target: []string{"configmap", "cfg"}},
		{name: "a resource prefix of one segment is a prefix", args: []string{"pods/"}, sel: Selection{Registry: reg, Prefix: "/registry/pods/"}},
		{name: "two slashes is a key", args: []string{"apps/deployments/x"}, sel: Selection{Registry: reg, Key: "/registry/apps/deployments/x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sel, target := ParseArgs(reg, tc.namespace, tc.args)
			if sel != tc.sel || !reflect.DeepEqual(target, tc.target) {
				t.Errorf("ParseArgs(%q, %q) = %+v, %q; want %+v, %q", tc.namespace, tc.args, sel, target, tc.sel, tc.target)
			}
		})
	}
}
