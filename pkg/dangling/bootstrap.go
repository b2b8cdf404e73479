package dangling

import (
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
