package nodeconfig

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// The files as each distribution writes them (trimmed to what matters).
const kubeadmManifest = `apiVersion: v1
kind: Pod
metadata:
  name: kube-apiserver
  namespace: kube-system
spec:
  containers:
  - command:
    - kube-apiserver
    - --advertise-address=10.0.0.10
    - --etcd-cafile=/etc/kubernetes/pki/etcd/ca.crt
    - --etcd-certfile=/etc/kubernetes/pki/apiserver-etcd-client.crt
    - --etcd-keyfile=/etc/kubernetes/pki/apiserver-etcd-client.key
    - --etcd-servers=https://127.0.0.1:2379
    - --encryption-provider-config=/etc/kubernetes/enc/enc.yaml
    image: registry.k8s.io/kube-apiserver:v1.37.2
    name: kube-apiserver
`

const kubesprayManifest = `apiVersion: v1
kind: Pod
metadata:
  name: kube-apiserver
spec:
  containers:
  - name: kube-apiserver
    command:
    - kube-apiserver
    - --etcd-servers=https://10.0.0.11:2379,https://10.0.0.12:2379,https://10.0.0.13:2379
    - --etcd-cafile=/etc/ssl/etcd/ssl/ca.pem
    - --etcd-certfile=/etc/ssl/etcd/ssl/node-cp1.pem
    - --etcd-keyfile=/etc/ssl/etcd/ssl/node-cp1-key.pem
    - --etcd-servers-overrides=/events#https://10.0.0.21:2379
`

const rke2Manifest = `apiVersion: v1
kind: Pod
metadata:
  name: kube-apiserver
spec:
  containers:
  - name: kube-apiserver
    command:
    - kube-apiserver
    args:
    - --etcd-cafile=/var/lib/rancher/rke2/server/tls/etcd/server-ca.crt
    - --etcd-certfile=/var/lib/rancher/rke2/server/tls/etcd/client.crt
    - --etcd-keyfile=/var/lib/rancher/rke2/server/tls/etcd/client.key
    - --etcd-servers=https://127.0.0.1:2379
    - --encryption-provider-config=/var/lib/rancher/rke2/server/cred/encryption-config.json
`

const openshiftConfig = `apiVersion: kubecontrolplane.config.openshift.io/v1
kind: KubeAPIServerConfig
apiServerArguments:
  etcd-servers:
  - https://10.0.0.5:2379
  - https://localhost:2379
  etcd-prefix:
  - kubernetes.io
  event-ttl:
  - 3h
`

func write(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func TestDiscover(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  func(root string) *Found
	}{
		{"kubeadm", map[string]string{"etc/kubernetes/manifests/kube-apiserver.yaml": kubeadmManifest}, func(r string) *Found {
			return &Found{Source: "kubeadm static pod /etc/kubernetes/manifests/kube-apiserver.yaml", Endpoints: []string{"https://127.0.0.1:2379"},
				CACert: r + "/etc/kubernetes/pki/etcd/ca.crt", Cert: r + "/etc/kubernetes/pki/apiserver-etcd-client.crt", Key: r + "/etc/kubernetes/pki/apiserver-etcd-client.key",
				Prefix: "/registry/", EncryptionConfig: r + "/etc/kubernetes/enc/enc.yaml"}
		}},
		{"kubespray", map[string]string{"etc/kubernetes/manifests/kube-apiserver.yaml": kubesprayManifest}, func(r string) *Found {
			return &Found{Source: "kubeadm static pod /etc/kubernetes/manifests/kube-apiserver.yaml",
				Endpoints: []string{"https://10.0.0.11:2379", "https://10.0.0.12:2379", "https://10.0.0.13:2379"},
				CACert:    r + "/etc/ssl/etcd/ssl/ca.pem", Cert: r + "/etc/ssl/etcd/ssl/node-cp1.pem", Key: r + "/etc/ssl/etcd/ssl/node-cp1-key.pem",
				Prefix: "/registry/", Overrides: []string{"/events#https://10.0.0.21:2379"}}
		}},
		{"rke2", map[string]string{"var/lib/rancher/rke2/agent/pod-manifests/kube-apiserver.yaml": rke2Manifest}, func(r string) *Found {
			return &Found{Source: "rke2 static pod /var/lib/rancher/rke2/agent/pod-manifests/kube-apiserver.yaml", Endpoints: []string{"https://127.0.0.1:2379"},
				CACert: r + "/var/lib/rancher/rke2/server/tls/etcd/server-ca.crt", Cert: r + "/var/lib/rancher/rke2/server/tls/etcd/client.crt", Key: r + "/var/lib/rancher/rke2/server/tls/etcd/client.key",
				Prefix: "/registry/", EncryptionConfig: r + "/var/lib/rancher/rke2/server/cred/encryption-config.json"}
		}},
		// k3s's kube-apiserver-arg: config.yaml, then config.yaml.d in
		// name order, "+" adding to what came before.
		{"k3s embedded etcd", map[string]string{"var/lib/rancher/k3s/server/tls/etcd/client.crt": "x", "var/lib/rancher/k3s/server/cred/encryption-config.json": "{}",
			"etc/rancher/k3s/config.yaml":                 "kube-apiserver-arg:\n- event-ttl=2h\n- lease-reuse-duration-seconds=30\n",
			"etc/rancher/k3s/config.yaml.d/50-ttl.YML":    "kube-apiserver-arg+:\n- --event-ttl=4h\n",
			"etc/rancher/k3s/config.yaml.d/10-other.yaml": "write-kubeconfig-mode: \"0600\"\n"}, func(r string) *Found {
			d := r + "/var/lib/rancher/k3s/server"
			return &Found{Source: "k3s embedded etcd (/var/lib/rancher/k3s/server/tls/etcd)", Endpoints: []string{"https://127.0.0.1:2379"},
				CACert: d + "/tls/etcd/server-ca.crt", Cert: d + "/tls/etcd/client.crt", Key: d + "/tls/etcd/client.key", Prefix: "/registry/", EncryptionConfig: d + "/cred/encryption-config.json",
				EventTTL: 4 * time.Hour, LeaseReuse: 30 * time.Second, LeaseFlagsFrom: "k3s's kube-apiserver-arg in /etc/rancher/k3s/config.yaml(.d)"}
		}},
		{"k3s with kine", map[string]string{"var/lib/rancher/k3s/server/db/state.db": "x",
			"etc/rancher/k3s/config.yaml":               "kube-apiserver-arg: event-ttl=2h\n",
			"etc/rancher/k3s/config.yaml.d/90-ttl.yaml": "kube-apiserver-arg: [event-ttl=90m]\n"}, func(r string) *Found {
			return &Found{Source: "k3s with kine (/var/lib/rancher/k3s/server/kine.sock)", Endpoints: []string{"unix://" + r + "/var/lib/rancher/k3s/server/kine.sock"}, Prefix: "/registry/",
				EventTTL: 90 * time.Minute, LeaseFlagsFrom: "k3s's kube-apiserver-arg in /etc/rancher/k3s/config.yaml(.d)"}
		}},
		{"OpenShift, the newest revision", map[string]string{
			"etc/kubernetes/static-pod-resources/kube-apiserver-pod-7/configmaps/config/config.yaml":                openshiftConfig,
			"etc/kubernetes/static-pod-resources/kube-apiserver-pod-12/configmaps/config/config.yaml":               openshiftConfig,
			"etc/kubernetes/static-pod-resources/kube-apiserver-pod-12/secrets/encryption-config/encryption-config": "x",
		}, func(r string) *Found {
			d := r + "/etc/kubernetes/static-pod-resources/kube-apiserver-pod-12"
			return &Found{Source: "OpenShift static pod resources /etc/kubernetes/static-pod-resources/kube-apiserver-pod-12",
				Endpoints: []string{"https://10.0.0.5:2379", "https://localhost:2379"}, Prefix: "/kubernetes.io/",
				CACert: d + "/configmaps/etcd-serving-ca/ca-bundle.crt", Cert: d + "/secrets/etcd-client/tls.crt", Key: d + "/secrets/etcd-client/tls.key",
				EncryptionConfig: d + "/secrets/encryption-config/encryption-config", EventTTL: 3 * time.Hour}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			write(t, root, tt.files)
			got, err := Discover(root)
			if err != nil {
				t.Fatal(err)
			}
			if want := tt.want(root); !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
			if got.Describe() == "" {
				t.Error("no description")
			}
		})
	}
	if _, err := Discover(t.TempDir()); !errors.Is(err, ErrNotFound) {
		t.Errorf("empty node: %v", err)
	}
	root := t.TempDir()
	write(t, root, map[string]string{"etc/kubernetes/manifests/kube-apiserver.yaml": "not: [yaml"})
	if _, err := Discover(root); err == nil || errors.Is(err, ErrNotFound) {
		t.Errorf("damaged manifest: %v", err)
	}
}
