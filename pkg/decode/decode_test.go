package decode

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
)

// encodeProto encodes obj exactly as kube-apiserver stores it.
func encodeProto(t testing.TB, obj runtime.Object) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(obj, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func testPod() *corev1.Pod {
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "p1", Namespace: "kb-system", UID: "8a5f4f1e-0d8b-4a7e-9d59-2b1c6f4d0a11",
			Finalizers: []string{"example.com/hold"},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
}

// unknownKindProto builds an envelope for a kind client-go does not know,
// with an ObjectMeta in field 1 like every Kubernetes object.
func unknownKindProto(t testing.TB) []byte {
	t.Helper()
	meta := metav1.ObjectMeta{Name: "w1", Namespace: "ns1"}
	mb, err := meta.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	raw := append([]byte{0x0a, byte(len(mb))}, mb...)
	u := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "widgets.example.com/v1", Kind: "Widget"}, Raw: raw}
	ub, err := u.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte("k8s\x00"), ub...)
}

func TestMeta(t *testing.T) {
	pod := encodeProto(t, testPod())
	var cb bytes.Buffer
	if err := cbor.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(testPod(), &cb); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		value   []byte
		format  Format
		kind    string
		objName string
		enc     *Encryption
		wantErr string
	}{
		{name: "protobuf pod", value: pod, format: FormatProtobuf, kind: "Pod", objName: "p1"},
		{name: "protobuf unknown kind", value: unknownKindProto(t), format: FormatProtobuf, kind: "Widget", objName: "w1"},
		{name: "json custom resource", value: []byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1","namespace":"ns1"},"spec":{}}`), format: FormatJSON, kind: "Widget", objName: "w1"},
		{name: "cbor", value: cb.Bytes(), format: FormatCBOR, kind: "Pod", objName: "p1"},
		{name: "aescbc", value: []byte("k8s:enc:aescbc:v1:key1:\x01\x02\x03"), format: FormatEncrypted, enc: &Encryption{Provider: "aescbc", Version: "v1", KeyName: "key1"}},
		{name: "kms v2", value: []byte("k8s:enc:kms:v2:vault:\x0a\x01x"), format: FormatEncrypted, enc: &Encryption{Provider: "kms", Version: "v2", KeyName: "vault"}},
		{name: "truncated protobuf", value: pod[:len(pod)/2], format: FormatProtobuf, wantErr: "decode protobuf envelope"},
		{name: "magic only", value: []byte("k8s\x00"), format: FormatProtobuf, wantErr: "no kind"},
		{name: "garbage", value: []byte{0xff, 0x00, 0x13, 0x37}, format: FormatUnknown, wantErr: "neither protobuf"},
		{name: "empty", value: nil, format: FormatUnknown, wantErr: "neither protobuf"},
		{name: "truncated json", value: []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p`), format: FormatJSON, wantErr: "decode JSON"},
		{name: "json without kind", value: []byte(`{"metadata":{"name":"x"}}`), format: FormatJSON, wantErr: "no apiVersion/kind"},
		{name: "malformed encryption prefix", value: []byte("k8s:enc:aescbc"), format: FormatEncrypted, wantErr: "malformed encryption prefix"},
		{name: "truncated cbor", value: cb.Bytes()[:10], format: FormatCBOR, wantErr: "decode CBOR"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj, err := Meta(tt.value)
			if obj == nil {
				t.Fatal("Meta returned a nil object")
			}
			if obj.Format != tt.format {
				t.Errorf("format = %s, want %s", obj.Format, tt.format)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if obj.Kind != tt.kind || obj.Meta.Name != tt.objName {
				t.Errorf("kind/name = %s/%s, want %s/%s", obj.Kind, obj.Meta.Name, tt.kind, tt.objName)
			}
			if tt.enc != nil && (obj.Encryption == nil || *obj.Encryption != *tt.enc) {
				t.Errorf("encryption = %v, want %v", obj.Encryption, tt.enc)
			}
		})
	}
}

func TestMetaKeepsRawBytes(t *testing.T) {
	value := encodeProto(t, testPod())
	obj, err := Meta(value)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(value, obj.Raw) || len(obj.Raw) == 0 {
		t.Fatal("Raw is not the stored object bytes")
	}
	if obj.Meta.UID != testPod().UID || obj.Meta.Finalizers[0] != "example.com/hold" {
		t.Errorf("metadata not decoded: %+v", obj.Meta)
	}
}

func TestTyped(t *testing.T) {
	tests := []struct {
		name    string
		value   []byte
		check   func(t *testing.T, o runtime.Object)
		wantErr error
	}{
		{name: "pod", value: encodeProto(t, testPod()), check: func(t *testing.T, o runtime.Object) {
			p, ok := o.(*corev1.Pod)
			if !ok || p.Spec.Containers[0].Image != "busybox" {
				t.Errorf("got %T %+v", o, o)
			}
		}},
		{name: "unknown protobuf kind", value: unknownKindProto(t), check: func(t *testing.T, o runtime.Object) {
			if o.GetObjectKind().GroupVersionKind().Kind != "Widget" {
				t.Errorf("got %v", o.GetObjectKind())
			}
		}},
		{name: "encrypted", value: []byte("k8s:enc:secretbox:v1:k:xyz"), wantErr: ErrEncrypted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, _, err := Typed(tt.value)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, o)
		})
	}
}

// FuzzMeta checks that no input, however damaged, makes decoding panic.
func FuzzMeta(f *testing.F) {
	f.Add(encodeProto(f, testPod()))
	f.Add(unknownKindProto(f))
	f.Add([]byte(`{"apiVersion":"v1","kind":"Pod"}`))
	f.Add([]byte("k8s:enc:aescbc:v1:key1:abc"))
	f.Fuzz(func(t *testing.T, value []byte) {
		_, _ = Meta(value)
		_, _, _ = Typed(value)
	})
}

// BenchmarkMeta decodes the metadata of a stored pod, the per-key work of a scan.
func BenchmarkMeta(b *testing.B) {
	value := encodeProto(b, testPod())
	b.SetBytes(int64(len(value)))
	for b.Loop() {
		if _, err := Meta(value); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTyped decodes a stored pod into a typed object, as get does.
func BenchmarkTyped(b *testing.B) {
	value := encodeProto(b, testPod())
	b.SetBytes(int64(len(value)))
	for b.Loop() {
		if _, _, err := Typed(value); err != nil {
			b.Fatal(err)
		}
	}
}
