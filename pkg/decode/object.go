package decode

import (
	"encoding/json"
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"
)

// Object is what decode learned about one etcd value.
type Object struct {
	// Format is the storage encoding of the value.
	Format Format
	// APIVersion and Kind come from the protobuf envelope or the JSON/CBOR document.
	APIVersion string
	Kind       string
	// Meta holds the object's metadata. It is empty for encrypted values.
	Meta metav1.ObjectMeta
	// Encryption is set for encrypted values.
	Encryption *Encryption
	// Raw is the stored object without its envelope (protobuf bytes, JSON or CBOR),
	// exactly as stored; nil for encrypted values. Meta's Raw aliases the
	// value it was given (a db file's value is valid until the file is
	// closed): copy what must outlive it.
	Raw []byte
}

// partial is the part of a JSON or CBOR object that scanning needs.
type partial struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
}

// ErrEncrypted is returned (wrapped) by Typed for values encrypted at rest.
var ErrEncrypted = errors.New("value is encrypted at rest")

// Meta decodes the envelope, type and metadata of value. It reads only the
// metadata field of protobuf objects, so it works for kinds no scheme knows.
// An encrypted value is not an error: Object.Encryption says how it is
// encrypted and Meta is left empty.
func Meta(value []byte) (*Object, error) {
	obj := &Object{Format: Detect(value)}
	switch obj.Format {
	case FormatEncrypted:
		enc, _, err := ParseEncryption(value)
		if err != nil {
			return obj, err
		}
		obj.Encryption = &enc
		return obj, nil
	case FormatProtobuf:
		env, ok := envelope(value[len(protobufMagic):])
		if !ok {
			u, err := unwrapProtobuf(value)
			if err != nil {
				return obj, err
			}
			env = unknown{apiVersion: u.APIVersion, kind: u.Kind, raw: u.Raw}
		}
		if env.kind == "" {
			return obj, errors.New("protobuf envelope has no kind")
		}
		obj.APIVersion, obj.Kind, obj.Raw = env.apiVersion, env.kind, env.raw
		if err := protobufMeta(env.raw, &obj.Meta); err != nil {
			return obj, fmt.Errorf("decode %s %s metadata: %w", env.apiVersion, env.kind, err)
		}
		return obj, nil
	case FormatJSON:
		var p partial
		if err := json.Unmarshal(value, &p); err != nil {
			return obj, fmt.Errorf("decode JSON: %w", err)
		}
		obj.APIVersion, obj.Kind, obj.Meta, obj.Raw = p.APIVersion, p.Kind, p.Metadata, value
		return obj, checkTyped(obj)
	case FormatCBOR:
		// The CBOR decoder rejects unknown fields, so decode the whole document
		// and pick the metadata out of it.
		m := map[string]interface{}{}
		if err := direct.Unmarshal(value, &m); err != nil {
			return obj, fmt.Errorf("decode CBOR: %w", err)
		}
		var p partial
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &p); err != nil {
			return obj, fmt.Errorf("decode CBOR metadata: %w", err)
		}
		obj.APIVersion, obj.Kind, obj.Meta, obj.Raw = p.APIVersion, p.Kind, p.Metadata, value
		return obj, checkTyped(obj)
	default:
		return obj, errors.New("value is neither protobuf (k8s\\x00), JSON, CBOR nor encrypted (k8s:enc:)")
	}
}

func checkTyped(obj *Object) error {
	if obj.APIVersion == "" || obj.Kind == "" {
		return fmt.Errorf("%s object has no apiVersion/kind", obj.Format)
	}
	return nil
}

// unwrapProtobuf strips the "k8s\x00" magic and decodes the runtime.Unknown envelope.
func unwrapProtobuf(value []byte) (*runtime.Unknown, error) {
	u := &runtime.Unknown{}
	if err := u.Unmarshal(value[len(protobufMagic):]); err != nil {
		return nil, fmt.Errorf("decode protobuf envelope: %w", err)
	}
	return u, nil
}

// protobufMeta walks the top-level fields of a Kubernetes protobuf message,
// checking that every field is well formed, and decodes field 1: every
// Kubernetes object stores its ObjectMeta there.
func protobufMeta(raw []byte, meta *metav1.ObjectMeta) error {
	found := false
	for len(raw) > 0 {
		num, typ, n := protowire.ConsumeTag(raw)
		if n < 0 {
			return fmt.Errorf("bad field tag: %w", protowire.ParseError(n))
		}
		raw = raw[n:]
		if num == 1 && typ == protowire.BytesType && !found {
			b, m := protowire.ConsumeBytes(raw)
			if m < 0 {
				return fmt.Errorf("metadata field: %w", protowire.ParseError(m))
			}
			if err := meta.Unmarshal(b); err != nil {
				return err
			}
			found = true
			raw = raw[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, raw)
		if m < 0 {
			return fmt.Errorf("field %d: %w", num, protowire.ParseError(m))
		}
		raw = raw[m:]
	}
	if !found {
		return errors.New("object has no metadata field")
	}
	return nil
}
