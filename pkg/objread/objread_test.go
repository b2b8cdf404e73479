package objread

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/regghost/regghost/internal/etcdtest"
)

const encPrefix = "k8s:enc:aescbc:v1:k1:"

// prefixDecrypter decrypts by stripping encPrefix (the real transformers
// are tested in pkg/decrypt and against kube-apiserver in e2e).
type prefixDecrypter struct{}

func (prefixDecrypter) Decrypt(_ context.Context, _ string, _ schema.GroupResource, data []byte) ([]byte, error) {
	if !bytes.HasPrefix(data, []byte(encPrefix)) {
		return nil, errors.New("no key for it")
	}
	return data[len(encPrefix):], nil
}

func TestRead(t *testing.T) {
	pv := etcdtest.Encode(t, &corev1.PersistentVolume{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolume"}, ObjectMeta: metav1.ObjectMeta{Name: "pv1"}})
	key := "/registry/persistentvolumes/pv1"
	tests := []struct {
		name   string
		reader Reader
		value  string
		why    []string
	}{
		{"as stored", Reader{Registry: "/registry/"}, pv, nil},
		{"decrypted", Reader{Registry: "/registry/", Decrypter: prefixDecrypter{}}, encPrefix + pv, nil},
		{"nobody can", Reader{Registry: "/registry/"}, encPrefix + pv, []string{"encrypted", "no --encryption-provider-config", "the API server is not asked"}},
		{"the local key is wrong", Reader{Registry: "/registry/", Decrypter: prefixDecrypter{}}, "k8s:enc:aescbc:v1:k2:" + pv, []string{"no key for it"}},
		{"undecodable", Reader{Registry: "/registry/"}, "k8s\x00garbage", []string{"the API server is not asked"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj, err := tt.reader.Read(context.Background(), key, []byte(tt.value))
			if tt.why == nil {
				if got, ok := obj.(*corev1.PersistentVolume); err != nil || !ok || got.Name != "pv1" {
					t.Fatalf("read: %v, %v", obj, err)
				}
				return
			}
			if !IsUnreadable(err) {
				t.Fatalf("err %v, want Unreadable", err)
			}
			for _, w := range tt.why {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q lacks %q", err, w)
				}
			}
		})
	}
}
