package recovery

import (
	"encoding/json"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/regghost/regghost/pkg/catalog"
)

// serverSetMetadata are the metadata fields the API server sets; a
// manifest for `kubectl apply` leaves them out.
var serverSetMetadata = []string{"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds"}

// Manifest turns a selected object into a manifest ready for `kubectl
// apply`: apiVersion and kind set, the fields the API server sets removed
// (metadata, a Service's allocated cluster IPs), and status removed unless
// withStatus.
func Manifest(o *Object, withStatus bool) (*unstructured.Unstructured, error) {
	if o.Obj == nil {
		return nil, fmt.Errorf("%s cannot be read here: %s", o.Key, o.Unreadable)
	}
	var content map[string]any
	if u, ok := o.Obj.(runtime.Unstructured); ok {
		content = runtime.DeepCopyJSON(u.UnstructuredContent())
	} else {
		var err error
		if content, err = runtime.DefaultUnstructuredConverter.ToUnstructured(o.Obj); err != nil {
			return nil, fmt.Errorf("convert %s: %w", o.Key, err)
		}
	}
	u := &unstructured.Unstructured{Object: content}
	if o.Meta != nil && o.Meta.APIVersion != "" {
		u.SetAPIVersion(o.Meta.APIVersion)
		u.SetKind(o.Meta.Kind)
	}
	if u.GetKind() == "" {
		return nil, fmt.Errorf("%s: the stored object names no kind", o.Key)
	}
	for _, f := range serverSetMetadata {
		unstructured.RemoveNestedField(u.Object, "metadata", f)
	}
	if !withStatus {
		delete(u.Object, "status")
	}
	switch {
	case u.GetKind() == "PersistentVolume" && u.GetAPIVersion() == "v1":
		// The claim it names was another object: its UID and version
		// would keep the volume Released (and, with Delete, deleted).
		unstructured.RemoveNestedField(u.Object, "spec", "claimRef", "uid")
		unstructured.RemoveNestedField(u.Object, "spec", "claimRef", "resourceVersion")
	case u.GetKind() == "Job" && u.GetAPIVersion() == "batch/v1":
		// The selector and labels the API server generated from the old UID.
		if manual, _, _ := unstructured.NestedBool(u.Object, "spec", "manualSelector"); !manual {
			unstructured.RemoveNestedField(u.Object, "spec", "selector")
			for _, l := range []string{"controller-uid", "batch.kubernetes.io/controller-uid"} {
				unstructured.RemoveNestedField(u.Object, "spec", "template", "metadata", "labels", l)
				unstructured.RemoveNestedField(u.Object, "metadata", "labels", l)
			}
		}
	}
	if u.GetKind() == "Service" && u.GetAPIVersion() == "v1" {
		if ip, _, _ := unstructured.NestedString(u.Object, "spec", "clusterIP"); ip != "None" {
			unstructured.RemoveNestedField(u.Object, "spec", "clusterIP")
			unstructured.RemoveNestedField(u.Object, "spec", "clusterIPs")
		}
	}
	return u, nil
}

// CRDResource is the resource a recovered CustomResourceDefinition
// defines, at its storage version.
func CRDResource(o *Object) (catalog.Resource, error) {
	crd, err := crdOf(o)
	if err != nil {
		return catalog.Resource{}, err
	}
	r := catalog.Resource{Group: crd.Spec.Group, Resource: crd.Spec.Names.Plural, Kind: crd.Spec.Names.Kind, Namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped, Custom: true}
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			r.Version = v.Name
		}
	}
	if r.Version == "" && len(crd.Spec.Versions) > 0 {
		r.Version = crd.Spec.Versions[0].Name
	}
	return r, nil
}

// crdOf reads a selected CustomResourceDefinition, whatever type decoding
// gave it.
func crdOf(o *Object) (*apiextensionsv1.CustomResourceDefinition, error) {
	var crd apiextensionsv1.CustomResourceDefinition
	raw, err := json.Marshal(o.Obj)
	if err == nil {
		err = json.Unmarshal(raw, &crd)
	}
	if err != nil || crd.Spec.Group == "" || crd.Spec.Names.Plural == "" {
		return nil, fmt.Errorf("%s is not a readable CustomResourceDefinition (%v)", o.Key, err)
	}
	return &crd, nil
}
