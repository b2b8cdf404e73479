package decode

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestEnvelopeAgreesWithGenerated: whatever envelope accepts, the generated
// runtime.Unknown decoder reads the same apiVersion, kind and raw; what it
// does not accept it leaves to that decoder.
func TestEnvelopeAgreesWithGenerated(t *testing.T) {
	pod := encodeProto(t, testPod())[len(protobufMagic):]
	tm := func(fields ...[]byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), bytes.Join(fields, nil))
	}
	str := func(num protowire.Number, v string) []byte {
		return protowire.AppendString(protowire.AppendTag(nil, num, protowire.BytesType), v)
	}
	raw := func(v string) []byte { return str(2, v) }
	tests := []struct {
		name   string
		b      []byte
		wantOK bool
	}{
		{"a pod as kube-apiserver writes it", pod, true},
		{"content type and encoding", bytes.Join([][]byte{tm(str(1, "v1"), str(2, "Pod")), raw("x"), str(3, ""), str(4, "application/vnd.kubernetes.protobuf")}, nil), true},
		{"fields repeated: the last wins", bytes.Join([][]byte{tm(str(1, "v1"), str(2, "Pod")), raw("a"), tm(str(2, "Secret")), raw("b")}, nil), true},
		{"no kind", bytes.Join([][]byte{tm(str(1, "v1")), raw("x")}, nil), true},
		{"empty", nil, true},
		{"an unknown field", append(bytes.Join([][]byte{tm(str(1, "v1"), str(2, "Pod")), raw("x")}, nil), protowire.AppendVarint(protowire.AppendTag(nil, 9, protowire.VarintType), 1)...), false},
		{"a varint where a string is", protowire.AppendVarint(protowire.AppendTag(nil, 2, protowire.VarintType), 7), false},
		{"an unknown field in typeMeta", tm(str(1, "v1"), str(3, "x")), false},
		{"truncated", pod[:len(pod)/2], false},
		{"illegal wire type", []byte("\x0a\x02v1\x12\x09ConfigMap\x1a\xff\xff"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := envelope(tt.b)
			if ok != tt.wantOK {
				t.Fatalf("envelope ok = %v, want %v", ok, tt.wantOK)
			}
			var u runtime.Unknown
			err := u.Unmarshal(tt.b)
			if !ok {
				return
			}
			if err != nil {
				t.Fatalf("envelope accepted what the generated decoder refuses: %v", err)
			}
			if got.apiVersion != u.APIVersion || got.kind != u.Kind || !bytes.Equal(got.raw, u.Raw) {
				t.Errorf("envelope read %q %q %d bytes, the generated decoder %q %q %d bytes", got.apiVersion, got.kind, len(got.raw), u.APIVersion, u.Kind, len(u.Raw))
			}
		})
	}
}

func BenchmarkEnvelope(b *testing.B) {
	pod := encodeProto(b, testPod())
	b.Run("envelope", func(b *testing.B) {
		for b.Loop() {
			envelope(pod[len(protobufMagic):])
		}
	})
	b.Run("generated", func(b *testing.B) {
		for b.Loop() {
			_, _ = unwrapProtobuf(pod)
		}
	})
}
