package decode

import (
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	apiregistrationv1beta1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1beta1"
)

// typedScheme knows client-go's built-in kinds, CustomResourceDefinitions and
// APIServices.
var typedScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, apiextensionsv1beta1.AddToScheme,
		apiregistrationv1.AddToScheme, apiregistrationv1beta1.AddToScheme} {
		if err := add(s); err != nil {
			panic(fmt.Sprintf("decode: build scheme: %v", err))
		}
	}
	return s
}()

var deserializer = serializer.NewCodecFactory(typedScheme).UniversalDeserializer()

// Typed decodes value into a full object: a typed object from client-go's
// scheme for built-in kinds, an Unstructured for JSON and CBOR objects of other
// kinds. A protobuf value of a kind the scheme does not know yields an
// Unstructured holding only apiVersion, kind and metadata.
func Typed(value []byte) (runtime.Object, *Object, error) {
	obj, err := Meta(value)
	if err != nil {
		return nil, obj, err
	}
	if obj.Encryption != nil {
		return nil, obj, fmt.Errorf("%w with %s key %q", ErrEncrypted, obj.Encryption.Provider, obj.Encryption.KeyName)
	}
	gvk := schema.FromAPIVersionAndKind(obj.APIVersion, obj.Kind)
	if obj.Format != FormatCBOR && typedScheme.Recognizes(gvk) {
		out, _, err := deserializer.Decode(value, nil, nil)
		if err != nil {
			return nil, obj, fmt.Errorf("decode %s: %w", gvk.Kind, err)
		}
		return out, obj, nil
	}
	u := &unstructured.Unstructured{}
	switch obj.Format {
	case FormatJSON:
		if err := u.UnmarshalJSON(value); err != nil {
			return nil, obj, fmt.Errorf("decode JSON %s: %w", gvk.Kind, err)
		}
	case FormatCBOR:
		m := map[string]interface{}{}
		if err := direct.Unmarshal(value, &m); err != nil {
			return nil, obj, fmt.Errorf("decode CBOR %s: %w", gvk.Kind, err)
		}
		u.Object = m
	default:
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&obj.Meta)
		if err != nil {
			return nil, obj, fmt.Errorf("convert metadata: %w", err)
		}
		u.Object = map[string]interface{}{"metadata": m}
		u.SetAPIVersion(obj.APIVersion)
		u.SetKind(obj.Kind)
	}
	return u, obj, nil
}

// Recognizes reports whether the typed scheme (client-go's built-in kinds at
// this release, CRDs and APIServices) can decode apiVersion and kind.
func Recognizes(apiVersion, kind string) bool {
	return typedScheme.Recognizes(schema.FromAPIVersionAndKind(apiVersion, kind))
}
