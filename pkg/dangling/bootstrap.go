package dangling

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The marks kube-apiserver puts on every object of its bootstrap RBAC
// policy (plugin/pkg/auth/authorizer/rbac/bootstrappolicy in
// k8s.io/kubernetes), written when RBAC is among --authorization-mode.
const (
	// BootstrappingLabel = BootstrappingRBACDefaults marks the policy.
	BootstrappingLabel        = "kubernetes.io/bootstrapping"
	BootstrappingRBACDefaults = "rbac-defaults"
	// AutoupdateAnnotation "true" says the API server reconciles the
	// object at every start: it re-creates it and adds back its subjects.
	AutoupdateAnnotation = "rbac.authorization.kubernetes.io/autoupdate"
)

// SystemNamespace is where the ServiceAccounts of the control plane's
// components live, and the only namespace the bootstrap policy's
// ServiceAccount subjects name.
const SystemNamespace = "kube-system"

// BootstrapPolicy reports whether obj is kube-apiserver's own bootstrap
// policy, which it reconciles at every start (the label and the
// autoupdate annotation).
func BootstrapPolicy(obj map[string]any) bool {
	label, _, _ := unstructured.NestedString(obj, "metadata", "labels", BootstrappingLabel)
	auto, _, _ := unstructured.NestedString(obj, "metadata", "annotations", AutoupdateAnnotation)
	return label == BootstrappingRBACDefaults && auto == "true"
}

// BootstrapLabelled reports whether obj carries the bootstrap policy's
// label, whatever its annotation: kube-apiserver re-creates such a binding
// at its next start when it is deleted, so a fix edits it and never
// deletes it.
func BootstrapLabelled(obj map[string]any) bool {
	label, _, _ := unstructured.NestedString(obj, "metadata", "labels", BootstrappingLabel)
	return label == BootstrappingRBACDefaults
}

// PolicySubject reports whether the ServiceAccount ns/name is one the
// bootstrap policy itself binds under the binding named binding, to the
// role named role. The policy's own subjects are kube-system accounts of
// the control plane's components, which exist only while the component
// runs that way, or never: system:controller:<c> binds kube-system/<c>
// (created only when kube-controller-manager runs with
// --use-service-account-credentials; cloud-provider's never),
// system:kube-dns binds kube-system/kube-dns (CoreDNS runs as coredns),
// system::leader-locking-<component> binds kube-system/<component>, and
// the policy's system: roles are bound to controllers' accounts named
// <something>-controller (leader-locking-kube-controller-manager binds
// kube-system/leader-election-controller too, whose controller is off by
// default). Such a subject is missing by design, and kube-apiserver puts it
// back at its next start. Any other subject of a bootstrap binding (a
// user's, added to it: reconciliation keeps extra subjects), or any
// subject of a binding to a role outside system: (cluster-admin), is
// judged as any.
func PolicySubject(binding, role, ns, name string) bool {
	if ns != SystemNamespace {
		return false
	}
	switch {
	case strings.HasPrefix(binding, "system:controller:") && name == strings.TrimPrefix(binding, "system:controller:"):
		return true
	case strings.HasPrefix(binding, "system::leader-locking-") && name == strings.TrimPrefix(binding, "system::leader-locking-"):
		return true
	case binding == "system:kube-dns" && name == "kube-dns":
		return true
	}
	return strings.HasPrefix(binding, "system:") && strings.HasPrefix(role, "system:") && strings.HasSuffix(name, "-controller")
}
