package decode

import (
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

// CRD decodes a stored CustomResourceDefinition (protobuf, JSON or CBOR).
func CRD(value []byte) (*apiextensionsv1.CustomResourceDefinition, error) {
	return typedAs(value, &apiextensionsv1.CustomResourceDefinition{})
}

// APIService decodes a stored APIService (protobuf, JSON or CBOR).
func APIService(value []byte) (*apiregistrationv1.APIService, error) {
	return typedAs(value, &apiregistrationv1.APIService{})
}

// typedAs decodes value into the type of empty, which the typed scheme
// knows; a JSON or CBOR document is converted from its unstructured form.
func typedAs[T runtime.Object](value []byte, empty T) (T, error) {
	var zero T
	obj, meta, err := Typed(value)
	if err != nil {
		return zero, err
	}
	if o, ok := obj.(T); ok {
		return o, nil
	}
	// Another version of the kind (a CRD stored as v1beta1): its fields are
	// read through the unstructured form.
	var content map[string]interface{}
	if u, ok := obj.(runtime.Unstructured); ok {
		content = u.UnstructuredContent()
	} else if content, err = runtime.DefaultUnstructuredConverter.ToUnstructured(obj); err != nil {
		return zero, fmt.Errorf("value is a %s %s, not a %T: %w", meta.APIVersion, meta.Kind, empty, err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(content, empty); err != nil {
		return zero, fmt.Errorf("decode %s %s: %w", meta.APIVersion, meta.Kind, err)
	}
	return empty, nil
}

// FromUnstructured converts an object read as unstructured (through the API
// server) into the typed object of its kind, when the scheme knows it.
func FromUnstructured(u runtime.Unstructured) (runtime.Object, error) {
	gvk := u.GetObjectKind().GroupVersionKind()
	obj, err := typedScheme.New(gvk)
	if err != nil {
		return u.(runtime.Object), nil
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), obj); err != nil {
		return nil, fmt.Errorf("convert %s: %w", gvk, err)
	}
	return obj, nil
}
