package unstick

import (
	"strings"
	"testing"
)

// TestParseArgs reads targets as kubectl names them.
func TestParseArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want Target
		err  string
	}{
		{[]string{"namespace", "shop"}, Target{Name: "shop"}, ""},
		{[]string{"ns/shop"}, Target{Name: "shop"}, ""},
		{[]string{"namespaces/shop"}, Target{Name: "shop"}, ""},
		{[]string{"Namespace", "shop"}, Target{Name: "shop"}, ""},
		{[]string{"crd/widgets.example.com"}, Target{CRD: true, Name: "widgets.example.com"}, ""},
		{[]string{"customresourcedefinition.apiextensions.k8s.io/widgets.example.com"}, Target{CRD: true, Name: "widgets.example.com"}, ""},
		{[]string{"crd", "widgets.example.com"}, Target{CRD: true, Name: "widgets.example.com"}, ""},
		{[]string{"shop"}, Target{}, "give what \"shop\" is: namespace shop (or ns/shop), or crd shop"},
		{[]string{"ns/"}, Target{}, "is not a namespace name"},
		{[]string{"ns/Shop"}, Target{}, "is not a namespace name"},
		{[]string{"pod/web"}, Target{}, "unstick takes namespace NAME or crd NAME, not \"pod\""},
		{[]string{"crd/widgets"}, Target{}, "is not a CustomResourceDefinition name"},
	} {
		got, err := ParseArgs(tc.args)
		if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) || got != tc.want {
			t.Errorf("ParseArgs(%q) = %+v, %v; want %+v, %q", tc.args, got, err, tc.want, tc.err)
		}
	}
}
