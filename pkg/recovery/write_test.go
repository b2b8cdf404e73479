package recovery

import "testing"

// TestControllerMade: the objects kube-controller-manager makes in every
// new namespace, named with that namespace's key.
func TestControllerMade(t *testing.T) {
	for key, want := range map[string][2]string{
		"/registry/configmaps/big/kube-root-ca.crt":      {"kube-controller-manager's root-ca-cert-publisher", "/registry/namespaces/big"},
		"/registry/serviceaccounts/big/default":          {"", ""},
		"/other/prefix/configmaps/x/kube-root-ca.crt":    {"kube-controller-manager's root-ca-cert-publisher", "/other/prefix/namespaces/x"},
		"/registry/configmaps/big/settings":              {"", ""},
		"/registry/secrets/big/kube-root-ca.crt":         {"", ""},
		"/registry/serviceaccounts/big/default-deployer": {"", ""},
		"kube-root-ca.crt":                               {"", ""},
	} {
		who, ns := controllerMade(key)
		if who != want[0] || ns != want[1] {
			t.Errorf("controllerMade(%s) = %q, %q; want %q, %q", key, who, ns, want[0], want[1])
		}
	}
}
