package repair

import (
	"bytes"
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/decode"
)

// sealedPrefix marks a value as encrypted for stripReader.
const sealedPrefix = "k8s:enc:kms:v2:gone:"

// stripReader reads a sealed value by dropping its prefix, as the local
// encryption config or the API server would.
type stripReader struct{}

func (stripReader) Read(_ context.Context, _ string, value []byte) (runtime.Object, error) {
	obj, _, err := decode.Typed(bytes.TrimPrefix(value, []byte(sealedPrefix)))
	return obj, err
}

// TestRestoreReadsTheClaimsVolume: restore's claim check reads an
// encrypted volume (or says it could not), never takes it for bound.
func TestRestoreReadsTheClaimsVolume(t *testing.T) {
	cli, _ := etcdtest.Start(t)
	ctx := context.Background()
	claim := &corev1.PersistentVolumeClaim{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data", UID: "u-data"}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv1"}}
	pv := &corev1.PersistentVolume{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolume"}, ObjectMeta: metav1.ObjectMeta{Name: "pv1"},
		Spec: corev1.PersistentVolumeSpec{ClaimRef: &corev1.ObjectReference{Namespace: "ns", Name: "other", UID: "u-other"}}}
	if _, err := cli.Put(ctx, "/registry/persistentvolumes/pv1", sealedPrefix+etcdtest.Encode(t, pv)); err != nil {
		t.Fatal(err)
	}
	b := &backup.Backup{Prefix: "/registry/", Entries: []backup.Entry{{Key: "/registry/persistentvolumeclaims/ns/data", Value: []byte(etcdtest.Encode(t, claim))}}}
	tests := []struct {
		name   string
		reader ContentReader
		want   string
	}{
		{"nobody can read the volume", nil, "cannot be read here"},
		{"the reader reads it", stripReader{}, "now bound to claim ns/other"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := RestoreWith(ctx, cli, b, RestoreOptions{DryRun: true, Reader: tt.reader, IntoRecreated: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(res) != 1 || !strings.Contains(res[0].Detail, tt.want) || strings.Contains(res[0].Detail, "there to bind it again") {
				t.Errorf("results %+v, want a detail saying %q", res, tt.want)
			}
		})
	}
}
