package e2e

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/regghost/regghost/pkg/etcdscan"
)

// kubeadmNode lays out a kubeadm node root whose kube-apiserver static pod
// names an etcd that does not answer, TLS files that do not exist, the
// prefix /kubernetes.io and an encryption config: only the prefix and the
// encryption config can be used, everything else must come from ETCDCTL_*.
func kubeadmNode(t *testing.T, encryption string) string {
	t.Helper()
	root := t.TempDir()
	copyFile(t, encryption, root, "etc/kubernetes/enc/enc.yaml")
	manifest := fmt.Sprintf(`apiVersion: v1
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
    - --etcd-servers=https://127.0.0.1:%d
    - --etcd-prefix=/kubernetes.io
    - --encryption-provider-config=/etc/kubernetes/enc/enc.yaml
`, freePort(t))
	mustNoErr(t, "mkdir", os.MkdirAll(filepath.Join(root, "etc/kubernetes/manifests"), 0o755))
	mustNoErr(t, "write manifest", os.WriteFile(filepath.Join(root, "etc/kubernetes/manifests/kube-apiserver.yaml"), []byte(manifest), 0o600))
	return root
}

// runWithEnv runs the regghost binary with env added to the environment.
func runWithEnv(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(bins.regghost, args...)
	cmd.Env = append(append(os.Environ(), "HOME="+t.TempDir(), "KUBECONFIG="), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("run regghost: %v", err)
	}
	checkWidth(t, args, true, cmd.ProcessState.ExitCode(), out.String(), errOut.String())
	return out.String(), errOut.String(), cmd.ProcessState.ExitCode()
}

// TestDiscoveryFillsWhatEnvLeavesOut: a runbook exports ETCDCTL_ENDPOINTS,
// ETCDCTL_CACERT, ETCDCTL_CERT and ETCDCTL_KEY; regghost still reads the
// node's kube-apiserver for the prefix and the encryption config, says in
// one line where each setting came from, and decrypts Secrets locally.
func TestDiscoveryFillsWhatEnvLeavesOut(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	encPath := filepath.Join(dir, "enc.yaml")
	mustNoErr(t, "write", os.WriteFile(encPath, []byte(encryptionConfig), 0o600))
	c := startCluster(t, clusterOptions{apiserverArgs: []string{"--encryption-provider-config", encPath, "--etcd-prefix", "/kubernetes.io"}})
	c.createNamespace(t, "app")
	c.createSecret(t, "app", "db")
	const key = "/kubernetes.io/secrets/app/db"
	if v := c.value(t, key); !bytes.HasPrefix(v, []byte("k8s:enc:aescbc:v1:key1:")) {
		t.Fatalf("%s is not aescbc-encrypted in etcd: %q", key, v)
	}

	root := kubeadmNode(t, encPath)
	nodeEnc := filepath.Join(root, "etc/kubernetes/enc/enc.yaml")
	env := []string{"ETCDCTL_ENDPOINTS=" + c.etcdURL, "ETCDCTL_CACERT=" + c.pki.CA, "ETCDCTL_CERT=" + c.pki.ClientCert, "ETCDCTL_KEY=" + c.pki.ClientKey}
	const source = "(from kubeadm static pod /etc/kubernetes/manifests/kube-apiserver.yaml)"

	t.Run("the line names both sources and the Secret is decrypted", func(t *testing.T) {
		out, errOut, code := runWithEnv(t, env, "scan", "--no-api", "-o", "json", "--node-root", root)
		if code != 0 {
			t.Fatalf("exit %d: %s\n%s", code, errOut, out)
		}
		want := "regghost: using etcd " + c.etcdURL + " (ETCDCTL_ENDPOINTS), client certificate " + c.pki.ClientCert + " (ETCDCTL_CERT), " +
			"prefix /kubernetes.io/ and encryption config " + nodeEnc + " " + source
		if oneLine(errOut) != want {
			t.Errorf("stderr\ngot  %s\nwant %s", oneLine(errOut), want)
		}
		rep := decodeReport(t, out)
		if rep.Prefix != "/kubernetes.io/" || rep.ScannedKeys == 0 {
			t.Errorf("scanned %d keys under %s", rep.ScannedKeys, rep.Prefix)
		}
		if rep.Decrypted == 0 {
			t.Errorf("nothing decrypted (encrypted %v)", rep.Encrypted)
		}
		for _, f := range rep.Findings {
			if f.Key == key || hasClass(f.Classes, etcdscan.ClassEncryptedUnknown) {
				t.Errorf("finding %s %v: %s", f.Key, f.Classes, f.Reason())
			}
		}
	})
	t.Run("get shows the Secret decrypted", func(t *testing.T) {
		out, errOut, code := runWithEnv(t, env, "get", key, "-o", "json", "--node-root", root)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if !strings.Contains(out, `"kind": "Secret"`) || !strings.Contains(out, base64.StdEncoding.EncodeToString([]byte("hunter2"))) {
			t.Errorf("not the decrypted Secret:\n%s", out)
		}
		if !strings.Contains(oneLine(errOut), "encryption config "+nodeEnc) {
			t.Errorf("stderr: %s", errOut)
		}
	})
	t.Run("a flag is named as a flag", func(t *testing.T) {
		_, errOut, code := runWithEnv(t, env[1:], append([]string{"ls", "--node-root", root}, "--endpoints", c.etcdURL)...)
		if code != 0 || !strings.Contains(oneLine(errOut), "using etcd "+c.etcdURL+" (--endpoints), client certificate "+c.pki.ClientCert+" (ETCDCTL_CERT), prefix /kubernetes.io/") {
			t.Errorf("exit %d: %s", code, errOut)
		}
	})
	t.Run("a --etcd-prefix other than the node's is used and noted", func(t *testing.T) {
		out, errOut, code := runWithEnv(t, env, "ls", "--node-root", root, "--etcd-prefix", "/registry/")
		note := "regghost: note: kube-apiserver on this node uses prefix /kubernetes.io/ (kubeadm static pod /etc/kubernetes/manifests/kube-apiserver.yaml); using /registry/ from --etcd-prefix"
		// The using line first, then the note; ls ends with its own count line.
		flat := oneLine(errOut)
		using, rest, _ := strings.Cut(flat, " regghost: note: ")
		if code != 0 || !strings.Contains(flat, note) || !strings.Contains(using, "prefix /registry/ (--etcd-prefix)") || !strings.HasPrefix("regghost: note: "+rest, note) {
			t.Errorf("exit %d: %s", code, errOut)
		}
		if strings.TrimSpace(out) != "" {
			t.Errorf("keys under /registry/: %s", out)
		}
	})
	t.Run("no node config: the line names the variables and defaults, nothing filled", func(t *testing.T) {
		out, errOut, code := runWithEnv(t, env, "scan", "--no-api", "-o", "json", "--node-root", t.TempDir())
		if code != 0 || !strings.HasPrefix(oneLine(errOut), "regghost: using etcd "+c.etcdURL+" (ETCDCTL_ENDPOINTS), client certificate "+c.pki.ClientCert+" (ETCDCTL_CERT), prefix /registry/ (default)") ||
			strings.Contains(errOut, "(from ") || strings.Count(errOut, "regghost:") != 1 {
			t.Errorf("exit %d: %s", code, errOut)
		}
		if rep := decodeReport(t, out); rep.Prefix != "/registry/" {
			t.Errorf("prefix %s", rep.Prefix)
		}
	})
}

func hasClass(classes []etcdscan.Class, c etcdscan.Class) bool {
	for _, have := range classes {
		if have == c {
			return true
		}
	}
	return false
}
