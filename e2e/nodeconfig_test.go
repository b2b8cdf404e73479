package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// copyFile copies src to root/dst, creating directories.
func copyFile(t *testing.T, src, root, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	mustNoErr(t, "read "+src, err)
	full := filepath.Join(root, dst)
	mustNoErr(t, "mkdir", os.MkdirAll(filepath.Dir(full), 0o755))
	mustNoErr(t, "write "+full, os.WriteFile(full, b, 0o600))
}

// TestNodeConfigDiscovery: with no etcd flag or ETCDCTL_* variable, regghost
// reads kube-apiserver's own settings from a node root laid out as kubeadm
// and OpenShift write it, says what it used in one line, and reaches etcd;
// explicit flags win.
func TestNodeConfigDiscovery(t *testing.T) {
	parallel(t)
	c := startCluster(t, clusterOptions{noAPIServer: true})
	c.put(t, "/kubernetes.io/configmaps/openshift-config/c1", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c1","namespace":"openshift-config"}}`))

	kubeadm := t.TempDir()
	copyFile(t, c.pki.CA, kubeadm, "etc/kubernetes/pki/etcd/ca.crt")
	copyFile(t, c.pki.ClientCert, kubeadm, "etc/kubernetes/pki/apiserver-etcd-client.crt")
	copyFile(t, c.pki.ClientKey, kubeadm, "etc/kubernetes/pki/apiserver-etcd-client.key")
	manifest := `apiVersion: v1
kind: Pod
metadata:
  name: kube-apiserver
  namespace: kube-system
spec:
  containers:
  - name: kube-apiserver
    image: registry.k8s.io/kube-apiserver:v1.37.2
    command:
    - kube-apiserver
    - --etcd-cafile=/etc/kubernetes/pki/etcd/ca.crt
    - --etcd-certfile=/etc/kubernetes/pki/apiserver-etcd-client.crt
    - --etcd-keyfile=/etc/kubernetes/pki/apiserver-etcd-client.key
    - --etcd-servers=` + c.etcdURL + "\n"
	mustNoErr(t, "mkdir", os.MkdirAll(filepath.Join(kubeadm, "etc/kubernetes/manifests"), 0o755))
	mustNoErr(t, "write manifest", os.WriteFile(filepath.Join(kubeadm, "etc/kubernetes/manifests/kube-apiserver.yaml"), []byte(manifest), 0o600))

	openshift := t.TempDir()
	res := "etc/kubernetes/static-pod-resources/kube-apiserver-pod-3/"
	copyFile(t, c.pki.CA, openshift, res+"configmaps/etcd-serving-ca/ca-bundle.crt")
	copyFile(t, c.pki.ClientCert, openshift, res+"secrets/etcd-client/tls.crt")
	copyFile(t, c.pki.ClientKey, openshift, res+"secrets/etcd-client/tls.key")
	mustNoErr(t, "mkdir", os.MkdirAll(filepath.Join(openshift, res, "configmaps/config"), 0o755))
	mustNoErr(t, "write config", os.WriteFile(filepath.Join(openshift, res, "configmaps/config/config.yaml"),
		[]byte("apiServerArguments:\n  etcd-servers:\n  - "+c.etcdURL+"\n  etcd-prefix:\n  - kubernetes.io\n"), 0o600))

	t.Run("kubeadm", func(t *testing.T) {
		out, errOut, code := runBinary(t, "", "scan", "--no-api", "-o", "json", "--node-root", kubeadm)
		if code != 0 || !strings.Contains(oneLine(errOut), "using etcd "+c.etcdURL) || !strings.Contains(oneLine(errOut), "from kubeadm static pod /etc/kubernetes/manifests/kube-apiserver.yaml") {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if rep := decodeReport(t, out); rep.Prefix != "/registry/" {
			t.Errorf("prefix %s", rep.Prefix)
		}
		if strings.Count(errOut, "regghost:") != 1 {
			t.Errorf("more than the using line on stderr:\n%s", errOut)
		}
	})
	t.Run("OpenShift stores under kubernetes.io", func(t *testing.T) {
		out, errOut, code := runBinary(t, "", "ls", "--node-root", openshift)
		if code != 0 || strings.TrimSpace(out) != "/kubernetes.io/configmaps/openshift-config/c1" || !strings.Contains(errOut, "prefix /kubernetes.io/") {
			t.Errorf("exit %d: %s\n%s", code, errOut, out)
		}
	})
	t.Run("explicit flags win; the node fills the rest", func(t *testing.T) {
		_, errOut, code := runBinary(t, "", append([]string{"scan", "--no-api", "-o", "json", "--node-root", openshift}, c.etcdArgs()...)...)
		if code != 0 || !strings.Contains(oneLine(errOut), "using etcd "+c.etcdURL+" (--endpoints), client certificate "+c.pki.ClientCert+" (--cert), prefix /kubernetes.io/ (from OpenShift static pod resources") {
			t.Errorf("exit %d: %s", code, errOut)
		}
	})
	t.Run("a flag beside its ETCDCTL_ variable wins, and says so", func(t *testing.T) {
		cmd := exec.Command(bins.regghost, append([]string{"scan", "--no-api", "-o", "json", "--node-root", openshift}, c.etcdArgs()...)...)
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "ETCDCTL_ENDPOINTS=127.0.0.1:1")
		var errOut strings.Builder
		cmd.Stderr = &errOut
		if err := cmd.Run(); err != nil || !strings.Contains(oneLine(errOut.String()), "using etcd "+c.etcdURL+" (--endpoints)") {
			t.Errorf("%v: %s", err, errOut.String())
		}
	})
}
