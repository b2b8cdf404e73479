package etcdscan

import "testing"

func TestParseKey(t *testing.T) {
	tests := []struct {
		key     string
		want    Key
		wantErr bool
	}{
		{key: "/registry/pods/ns1/p1", want: Key{Prefix: "pods", Namespace: "ns1", Name: "p1"}},
		{key: "/registry/namespaces/ns1", want: Key{Prefix: "namespaces", Name: "ns1"}},
		{key: "/registry/services/specs/default/kubernetes", want: Key{Prefix: "services/specs", Namespace: "default", Name: "kubernetes"}},
		{key: "/registry/services/endpoints/default/kubernetes", want: Key{Prefix: "services/endpoints", Namespace: "default", Name: "kubernetes"}},
		{key: "/registry/minions/node-1", want: Key{Prefix: "minions", Name: "node-1"}},
		{key: "/registry/example.com/widgets/ns1/w1", want: Key{Prefix: "example.com/widgets", Namespace: "ns1", Name: "w1"}},
		{key: "/registry/example.com/clusterwidgets/w1", want: Key{Prefix: "example.com/clusterwidgets", Name: "w1"}},
		{key: "/registry/apiextensions.k8s.io/customresourcedefinitions/widgets.example.com", want: Key{Prefix: "apiextensions.k8s.io/customresourcedefinitions", Name: "widgets.example.com"}},
		{key: "/registry/", wantErr: true},
		{key: "/registry/pods", wantErr: true},
		{key: "/registry/pods/", wantErr: true},
		{key: "/registry/pods/ns1/", wantErr: true},
		{key: "/registry/pods/a/b/c", wantErr: true},
		{key: "/registry/example.com/widgets", wantErr: true},
		{key: "/other/pods/ns/p", wantErr: true},
		{key: "", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			got, err := ParseKey("/registry/", tt.key)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err == nil && got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}
