package nodeconfig

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// kubeadm's etcd static pod (trimmed), with a quota given in extraArgs and
// the data directory mounted from another host path than its own.
const kubeadmEtcd = `apiVersion: v1
kind: Pod
metadata:
  name: etcd
  namespace: kube-system
spec:
  containers:
  - command:
    - etcd
    - --advertise-client-urls=https://10.0.0.10:2379
    - --client-cert-auth=true
    - --data-dir=/var/lib/etcd
    - --name=cp-1
    - --quota-backend-bytes=8589934592
    image: registry.k8s.io/etcd:3.6.5-0
    name: etcd
    volumeMounts:
    - mountPath: /var/lib/etcd
      name: etcd-data
    - mountPath: /etc/kubernetes/pki/etcd
      name: etcd-certs
  volumes:
  - hostPath:
      path: /etc/kubernetes/pki/etcd
    name: etcd-certs
  - hostPath:
      path: /data/etcd
    name: etcd-data
`

// rke2's etcd static pod passes a config file, where its settings are.
const rke2Etcd = `apiVersion: v1
kind: Pod
metadata:
  name: etcd
spec:
  containers:
  - name: etcd
    command:
    - etcd
    args:
    - --config-file=/var/lib/rancher/rke2/server/db/etcd/config
    volumeMounts:
    - mountPath: /var/lib/rancher/rke2/server/db/etcd
      name: dir
  volumes:
  - hostPath:
      path: /var/lib/rancher/rke2/server/db/etcd
    name: dir
`

const rke2EtcdConfig = `name: cp-2-5a1b2c3d
data-dir: /var/lib/rancher/rke2/server/db/etcd
listen-client-urls: https://127.0.0.1:2379
`

func TestDiscoverEtcd(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  func(root string) *EtcdMember
		err   string
	}{
		{"kubeadm, data directory through its hostPath", map[string]string{"etc/kubernetes/manifests/etcd.yaml": kubeadmEtcd}, func(r string) *EtcdMember {
			return &EtcdMember{Source: "kubeadm static pod /etc/kubernetes/manifests/etcd.yaml", Name: "cp-1", DataDir: r + "/data/etcd", QuotaBytes: 8 << 30}
		}, ""},
		{"rke2, from its config file", map[string]string{"var/lib/rancher/rke2/agent/pod-manifests/etcd.yaml": rke2Etcd,
			"var/lib/rancher/rke2/server/db/etcd/config": rke2EtcdConfig}, func(r string) *EtcdMember {
			return &EtcdMember{Source: "rke2 static pod /var/lib/rancher/rke2/agent/pod-manifests/etcd.yaml and /var/lib/rancher/rke2/server/db/etcd/config",
				Name: "cp-2-5a1b2c3d", DataDir: r + "/var/lib/rancher/rke2/server/db/etcd"}
		}, ""},
		{"rke2 without its config file", map[string]string{"var/lib/rancher/rke2/agent/pod-manifests/etcd.yaml": rke2Etcd}, nil, "read etcd's config file"},
		{"a damaged manifest", map[string]string{"etc/kubernetes/manifests/etcd.yaml": "not: [yaml"}, nil, "read kubeadm static pod"},
		{"a bad quota", map[string]string{"etc/kubernetes/manifests/etcd.yaml": strings.Replace(kubeadmEtcd, "=8589934592", "=8G", 1)}, nil, `--quota-backend-bytes "8G" is not a number`},
		{"no etcd container", map[string]string{"etc/kubernetes/manifests/etcd.yaml": kubeadmManifest}, nil, "has no etcd container"},
		{"no manifest", map[string]string{"etc/kubernetes/manifests/kube-apiserver.yaml": kubeadmManifest}, nil, ErrNotFound.Error()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			write(t, root, tc.files)
			got, err := DiscoverEtcd(root)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("DiscoverEtcd error %v, want %q", err, tc.err)
				}
				if tc.err == ErrNotFound.Error() && !errors.Is(err, ErrNotFound) {
					t.Fatalf("error %v is not ErrNotFound", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := tc.want(root); !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
		})
	}
}
