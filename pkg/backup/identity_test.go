package backup

import (
	"errors"
	"testing"
)

// TestSameCluster: the kube-system UIDs decide; the etcd cluster IDs only
// when neither UID is known (or when they differ); a side that cannot be
// told against one that can is refused.
func TestSameCluster(t *testing.T) {
	tests := []struct {
		name         string
		source, here Identity
		want         error
	}{
		{"same uid", Identity{KubeSystemUID: "a"}, Identity{KubeSystemUID: "a", ClusterID: "1"}, nil},
		{"other uid", Identity{KubeSystemUID: "b"}, Identity{KubeSystemUID: "a"}, ErrOtherCluster},
		{"other uid, same etcd cluster", Identity{KubeSystemUID: "b", ClusterID: "1"}, Identity{KubeSystemUID: "a", ClusterID: "1"}, ErrOtherCluster},
		{"same uid, etcd restored from a snapshot", Identity{KubeSystemUID: "a", ClusterID: "1"}, Identity{KubeSystemUID: "a", ClusterID: "2"}, nil},
		{"old backup, same etcd cluster (a rebuilt cluster shares it)", Identity{ClusterID: "1"}, Identity{KubeSystemUID: "a", ClusterID: "1"}, ErrUnknownCluster},
		{"this cluster's kube-system unreadable, same etcd cluster", Identity{KubeSystemUID: "b", ClusterID: "1"}, Identity{ClusterID: "1", Unknown: "encrypted"}, ErrUnknownCluster},
		{"neither kube-system readable, same etcd cluster", Identity{ClusterID: "1"}, Identity{ClusterID: "1"}, nil},
		{"neither kube-system readable, other etcd cluster", Identity{ClusterID: "2"}, Identity{ClusterID: "1"}, ErrOtherCluster},
		{"old backup, other etcd cluster", Identity{ClusterID: "2"}, Identity{KubeSystemUID: "a", ClusterID: "1"}, ErrOtherCluster},
		{"snapshot without kube-system", Identity{}, Identity{KubeSystemUID: "a"}, ErrUnknownCluster},
		{"this cluster's kube-system unreadable", Identity{KubeSystemUID: "b"}, Identity{ClusterID: "1", Unknown: "encrypted"}, ErrUnknownCluster},
		{"kine, old backup with nothing", Identity{}, Identity{KubeSystemUID: "a"}, ErrUnknownCluster},
		{"bare etcd without Kubernetes", Identity{}, Identity{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := SameCluster(tt.source, tt.here)
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("SameCluster(%v, %v) = %v, want %v", tt.source, tt.here, err, tt.want)
			}
		})
	}
}

// TestIsGrant: roles, bindings, webhooks, APIServices, CRDs and bootstrap
// tokens are grants, under this cluster's prefix or another's.
func TestIsGrant(t *testing.T) {
	tests := []struct {
		key  string
		want bool
	}{
		{"/registry/clusterrolebindings/x", true},
		{"/registry/rolebindings/ns/x", true},
		{"/registry/validatingwebhookconfigurations/x", true},
		{"/registry/apiregistration.k8s.io/apiservices/v1.x", true},
		{"/registry/apiextensions.k8s.io/customresourcedefinitions/w.example.com", true},
		{"/registry/secrets/kube-system/bootstrap-token-abcdef", true},
		{"/other/clusterrolebindings/x", true},
		{"/registry/configmaps/ns/x", false},
		{"/registry/secrets/shop/db", false},
	}
	for _, tt := range tests {
		if got := IsGrant("/registry/", tt.key); got != tt.want {
			t.Errorf("IsGrant(%s) = %v, want %v", tt.key, got, tt.want)
		}
	}
}
