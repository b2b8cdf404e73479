package nodeconfig

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// node is a kubeadm node whose kube-apiserver stores under /kubernetes.io/
// and encrypts with /etc/kubernetes/enc/enc.yaml.
func node() *Found {
	return &Found{Source: "kubeadm static pod /etc/kubernetes/manifests/kube-apiserver.yaml",
		Endpoints: []string{"https://127.0.0.1:2379"},
		CACert:    "/etc/kubernetes/pki/etcd/ca.crt", Cert: "/etc/kubernetes/pki/apiserver-etcd-client.crt", Key: "/etc/kubernetes/pki/apiserver-etcd-client.key",
		Prefix: "/kubernetes.io/", EncryptionConfig: "/etc/kubernetes/enc/enc.yaml"}
}

// defaults are regghost's flag defaults.
func defaults() Settings {
	return Settings{Endpoints: []string{"127.0.0.1:2379"}, Prefix: "/registry/"}
}

const src = " (from kubeadm static pod /etc/kubernetes/manifests/kube-apiserver.yaml)"

func TestFill(t *testing.T) {
	dir := t.TempDir()
	encA, encB, encCopy := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml"), filepath.Join(dir, "copy.yaml")
	for path, content := range map[string]string{encA: "keys: a", encB: "keys: b", encCopy: "keys: a"} {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name  string
		cur   func(*Settings)
		given Given
		node  func(*Found)
		want  Settings
		line  string
		notes []string
	}{
		{
			name: "nothing given: all from the node",
			want: Settings{Endpoints: []string{"https://127.0.0.1:2379"}, CACert: "/etc/kubernetes/pki/etcd/ca.crt",
				Cert: "/etc/kubernetes/pki/apiserver-etcd-client.crt", Key: "/etc/kubernetes/pki/apiserver-etcd-client.key",
				Prefix: "/kubernetes.io/", EncryptionConfig: "/etc/kubernetes/enc/enc.yaml"},
			line: "using etcd https://127.0.0.1:2379, client certificate /etc/kubernetes/pki/apiserver-etcd-client.crt, prefix /kubernetes.io/ and encryption config /etc/kubernetes/enc/enc.yaml" + src,
		},
		{
			name: "ETCDCTL_* give etcd; the node gives prefix and encryption config",
			cur: func(s *Settings) {
				s.Endpoints, s.CACert, s.Cert, s.Key = []string{"https://10.0.0.1:2379"}, "/run/ca.crt", "/run/c.crt", "/run/c.key"
			},
			given: Given{FlagEndpoints: "ETCDCTL_ENDPOINTS", FlagCACert: "ETCDCTL_CACERT", FlagCert: "ETCDCTL_CERT", FlagKey: "ETCDCTL_KEY"},
			want: Settings{Endpoints: []string{"https://10.0.0.1:2379"}, CACert: "/run/ca.crt", Cert: "/run/c.crt", Key: "/run/c.key",
				Prefix: "/kubernetes.io/", EncryptionConfig: "/etc/kubernetes/enc/enc.yaml"},
			line: "using etcd https://10.0.0.1:2379 (ETCDCTL_ENDPOINTS), client certificate /run/c.crt (ETCDCTL_CERT), prefix /kubernetes.io/ and encryption config /etc/kubernetes/enc/enc.yaml" + src,
		},
		{
			name:  "--endpoints only: the TLS files come from the node, the CA with them",
			cur:   func(s *Settings) { s.Endpoints = []string{"https://10.0.0.1:2379", "https://10.0.0.2:2379"} },
			given: Given{FlagEndpoints: "--endpoints"},
			want: Settings{Endpoints: []string{"https://10.0.0.1:2379", "https://10.0.0.2:2379"}, CACert: "/etc/kubernetes/pki/etcd/ca.crt",
				Cert: "/etc/kubernetes/pki/apiserver-etcd-client.crt", Key: "/etc/kubernetes/pki/apiserver-etcd-client.key",
				Prefix: "/kubernetes.io/", EncryptionConfig: "/etc/kubernetes/enc/enc.yaml"},
			line: "using etcd https://10.0.0.1:2379,https://10.0.0.2:2379 (--endpoints), client certificate /etc/kubernetes/pki/apiserver-etcd-client.crt, prefix /kubernetes.io/ and encryption config /etc/kubernetes/enc/enc.yaml" + src,
		},
		{
			name:  "--cacert given, the rest from the node: the CA is named",
			cur:   func(s *Settings) { s.CACert = "/run/ca.crt" },
			given: Given{FlagCACert: "--cacert"},
			want: Settings{Endpoints: []string{"https://127.0.0.1:2379"}, CACert: "/run/ca.crt",
				Cert: "/etc/kubernetes/pki/apiserver-etcd-client.crt", Key: "/etc/kubernetes/pki/apiserver-etcd-client.key",
				Prefix: "/kubernetes.io/", EncryptionConfig: "/etc/kubernetes/enc/enc.yaml"},
			line: "using CA /run/ca.crt (--cacert), etcd https://127.0.0.1:2379, client certificate /etc/kubernetes/pki/apiserver-etcd-client.crt, prefix /kubernetes.io/ and encryption config /etc/kubernetes/enc/enc.yaml" + src,
		},
		{
			name:  "ETCDCTL_CERT and ETCDCTL_KEY given: the node's CA is named",
			cur:   func(s *Settings) { s.Cert, s.Key = "/run/c.crt", "/run/c.key" },
			given: Given{FlagCert: "ETCDCTL_CERT", FlagKey: "ETCDCTL_KEY"},
			want: Settings{Endpoints: []string{"https://127.0.0.1:2379"}, CACert: "/etc/kubernetes/pki/etcd/ca.crt", Cert: "/run/c.crt", Key: "/run/c.key",
				Prefix: "/kubernetes.io/", EncryptionConfig: "/etc/kubernetes/enc/enc.yaml"},
			line: "using client certificate /run/c.crt (ETCDCTL_CERT), etcd https://127.0.0.1:2379, CA /etc/kubernetes/pki/etcd/ca.crt, prefix /kubernetes.io/ and encryption config /etc/kubernetes/enc/enc.yaml" + src,
		},
		{
			name:  "--cert without --key: the node's key is not paired with another certificate",
			cur:   func(s *Settings) { s.Cert = "/run/c.crt" },
			given: Given{FlagCert: "--cert"},
			want: Settings{Endpoints: []string{"https://127.0.0.1:2379"}, CACert: "/etc/kubernetes/pki/etcd/ca.crt", Cert: "/run/c.crt",
				Prefix: "/kubernetes.io/", EncryptionConfig: "/etc/kubernetes/enc/enc.yaml"},
			line: "using client certificate /run/c.crt (--cert), etcd https://127.0.0.1:2379, CA /etc/kubernetes/pki/etcd/ca.crt, prefix /kubernetes.io/ and encryption config /etc/kubernetes/enc/enc.yaml" + src,
		},
		{
			name:  "--key without --cert: no certificate from the node either",
			cur:   func(s *Settings) { s.Key = "/run/c.key" },
			given: Given{FlagKey: "--key"},
			want: Settings{Endpoints: []string{"https://127.0.0.1:2379"}, CACert: "/etc/kubernetes/pki/etcd/ca.crt", Key: "/run/c.key",
				Prefix: "/kubernetes.io/", EncryptionConfig: "/etc/kubernetes/enc/enc.yaml"},
			line: "using etcd https://127.0.0.1:2379, CA /etc/kubernetes/pki/etcd/ca.crt, prefix /kubernetes.io/ and encryption config /etc/kubernetes/enc/enc.yaml" + src,
		},
		{
			name:  "certificate from a flag, key from a variable: both named",
			cur:   func(s *Settings) { s.CACert, s.Cert, s.Key = "/run/ca.crt", "/run/c.crt", "/run/c.key" },
			given: Given{FlagCACert: "--cacert", FlagCert: "--cert", FlagKey: "ETCDCTL_KEY"},
			want: Settings{Endpoints: []string{"https://127.0.0.1:2379"}, CACert: "/run/ca.crt", Cert: "/run/c.crt", Key: "/run/c.key",
				Prefix: "/kubernetes.io/", EncryptionConfig: "/etc/kubernetes/enc/enc.yaml"},
			line: "using client certificate /run/c.crt (--cert, ETCDCTL_KEY), etcd https://127.0.0.1:2379, prefix /kubernetes.io/ and encryption config /etc/kubernetes/enc/enc.yaml" + src,
		},
		{
			name:  "--prefix that disagrees with the node: kept, and noted",
			given: Given{FlagPrefix: "--prefix"},
			want: Settings{Endpoints: []string{"https://127.0.0.1:2379"}, CACert: "/etc/kubernetes/pki/etcd/ca.crt",
				Cert: "/etc/kubernetes/pki/apiserver-etcd-client.crt", Key: "/etc/kubernetes/pki/apiserver-etcd-client.key",
				Prefix: "/registry/", EncryptionConfig: "/etc/kubernetes/enc/enc.yaml"},
			line:  "using prefix /registry/ (--prefix), etcd https://127.0.0.1:2379, client certificate /etc/kubernetes/pki/apiserver-etcd-client.crt and encryption config /etc/kubernetes/enc/enc.yaml" + src,
			notes: []string{"note: kube-apiserver on this node uses prefix /kubernetes.io/ (kubeadm static pod /etc/kubernetes/manifests/kube-apiserver.yaml); using /registry/ from --prefix"},
		},
		{
			name:  "--prefix that agrees with the node: no note",
			cur:   func(s *Settings) { s.Prefix = "/kubernetes.io/" },
			given: Given{FlagPrefix: "--prefix"},
			want: Settings{Endpoints: []string{"https://127.0.0.1:2379"}, CACert: "/etc/kubernetes/pki/etcd/ca.crt",
				Cert: "/etc/kubernetes/pki/apiserver-etcd-client.crt", Key: "/etc/kubernetes/pki/apiserver-etcd-client.key",
				Prefix: "/kubernetes.io/", EncryptionConfig: "/etc/kubernetes/enc/enc.yaml"},
			line: "using prefix /kubernetes.io/ (--prefix), etcd https://127.0.0.1:2379, client certificate /etc/kubernetes/pki/apiserver-etcd-client.crt and encryption config /etc/kubernetes/enc/enc.yaml" + src,
		},
		{
			name: "everything given: the line says so; the differing encryption config is noted",
			cur: func(s *Settings) {
				*s = Settings{Endpoints: []string{"https://10.0.0.1:2379"}, CACert: "/run/ca.crt", Cert: "/run/c.crt", Key: "/run/c.key", Prefix: "/kubernetes.io/", EncryptionConfig: encB}
			},
			given: Given{FlagEndpoints: "--endpoints", FlagCACert: "--cacert", FlagCert: "--cert", FlagKey: "--key", FlagPrefix: "--prefix", FlagEncryptionConfig: "--encryption-provider-config"},
			node:  func(f *Found) { f.EncryptionConfig = encA },
			want:  Settings{Endpoints: []string{"https://10.0.0.1:2379"}, CACert: "/run/ca.crt", Cert: "/run/c.crt", Key: "/run/c.key", Prefix: "/kubernetes.io/", EncryptionConfig: encB},
			notes: []string{"note: kube-apiserver on this node uses encryption config " + encA + "; using " + encB + " from --encryption-provider-config, which differs"},
			line:  "using etcd https://10.0.0.1:2379 (--endpoints), client certificate /run/c.crt (--cert), prefix /kubernetes.io/ (--prefix), encryption config " + encB + " (--encryption-provider-config)",
		},
		{
			name:  "a copy of the node's encryption config: no note",
			cur:   func(s *Settings) { s.EncryptionConfig = encCopy },
			given: Given{FlagEncryptionConfig: "--encryption-provider-config"},
			node:  func(f *Found) { f.EncryptionConfig = encA },
			want: Settings{Endpoints: []string{"https://127.0.0.1:2379"}, CACert: "/etc/kubernetes/pki/etcd/ca.crt",
				Cert: "/etc/kubernetes/pki/apiserver-etcd-client.crt", Key: "/etc/kubernetes/pki/apiserver-etcd-client.key",
				Prefix: "/kubernetes.io/", EncryptionConfig: encCopy},
			line: "using encryption config " + encCopy + " (--encryption-provider-config), etcd https://127.0.0.1:2379, client certificate /etc/kubernetes/pki/apiserver-etcd-client.crt and prefix /kubernetes.io/" + src,
		},
		{
			name:  "an encryption config given where the node has none: no note",
			cur:   func(s *Settings) { s.EncryptionConfig = encB },
			given: Given{FlagEncryptionConfig: "ETCDCTL_ENCRYPTION_PROVIDER_CONFIG"},
			node:  func(f *Found) { f.EncryptionConfig = "" },
			want: Settings{Endpoints: []string{"https://127.0.0.1:2379"}, CACert: "/etc/kubernetes/pki/etcd/ca.crt",
				Cert: "/etc/kubernetes/pki/apiserver-etcd-client.crt", Key: "/etc/kubernetes/pki/apiserver-etcd-client.key",
				Prefix: "/kubernetes.io/", EncryptionConfig: encB},
			line: "using encryption config " + encB + " (ETCDCTL_ENCRYPTION_PROVIDER_CONFIG), etcd https://127.0.0.1:2379, client certificate /etc/kubernetes/pki/apiserver-etcd-client.crt and prefix /kubernetes.io/" + src,
		},
		{
			name: "what the node lacks keeps its default; other etcds are named, sorted",
			node: func(f *Found) {
				f.Endpoints, f.CACert, f.Cert, f.Key, f.EncryptionConfig = nil, "", "", "", ""
				f.Overrides = []string{"/events#https://10.0.0.21:2379", "apps/deployments#https://10.0.0.22:2379"}
			},
			want: Settings{Endpoints: []string{"127.0.0.1:2379"}, Prefix: "/kubernetes.io/"},
			line: "using etcd 127.0.0.1:2379 (default), prefix /kubernetes.io/ and other etcds for /events#https://10.0.0.21:2379, apps/deployments#https://10.0.0.22:2379" + src,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cur := defaults()
			if tt.cur != nil {
				tt.cur(&cur)
			}
			f := node()
			if tt.node != nil {
				tt.node(f)
			}
			got := Fill(cur, tt.given, f)
			if !reflect.DeepEqual(got.Settings, tt.want) {
				t.Errorf("settings\ngot  %+v\nwant %+v", got.Settings, tt.want)
			}
			if got.Line != tt.line {
				t.Errorf("line\ngot  %q\nwant %q", got.Line, tt.line)
			}
			if !reflect.DeepEqual(got.Notes, tt.notes) {
				t.Errorf("notes\ngot  %q\nwant %q", got.Notes, tt.notes)
			}
		})
	}
}

// TestFillKeepsTheNodeUntouched: the merge copies what it takes.
func TestFillKeepsTheNodeUntouched(t *testing.T) {
	f := node()
	m := Fill(defaults(), nil, f)
	m.Settings.Endpoints[0] = "changed"
	if f.Endpoints[0] != "https://127.0.0.1:2379" {
		t.Errorf("the node's endpoints changed: %v", f.Endpoints)
	}
}
