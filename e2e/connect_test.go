package e2e

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/regghost/regghost/internal/etcdtest"
)

// TestConnectionErrors checks that bad certificates, missing files and an
// unreachable endpoint fail with one clear line and exit code 1, and that
// the ETCDCTL_* variables incident runbooks export are honoured.
func TestConnectionErrors(t *testing.T) {
	parallel(t)
	c := startCluster(t, clusterOptions{noAPIServer: true})
	other := newPKI(t, t.TempDir())
	tests := []struct {
		name    string
		args    []string
		env     []string
		code    int
		wantErr string
	}{
		{name: "no client certificate", args: []string{"--endpoints", c.etcdURL, "--cacert", c.pki.CA, "--dial-timeout", "2s"}, code: 1, wantErr: "requires a client certificate: pass --cert and --key"},
		{name: "certificate from another CA", args: []string{"--endpoints", c.etcdURL, "--cacert", c.pki.CA, "--cert", other.ClientCert, "--key", other.ClientKey, "--dial-timeout", "2s"}, code: 1, wantErr: "rejected the client certificate"},
		{name: "server certificate from another CA", args: []string{"--endpoints", c.etcdURL, "--cacert", other.CA, "--cert", c.pki.ClientCert, "--key", c.pki.ClientKey, "--dial-timeout", "2s"}, code: 1, wantErr: "--cacert does not hold"},
		{name: "key of another certificate", args: []string{"--endpoints", c.etcdURL, "--cacert", c.pki.CA, "--cert", c.pki.ClientCert, "--key", c.pki.ServerKey}, code: 1, wantErr: "is not the private key of --cert"},
		{name: "a dead endpoint before a live one", args: []string{"--endpoints", "https://127.0.0.1:1," + c.etcdURL, "--cacert", c.pki.CA, "--cert", c.pki.ClientCert, "--key", c.pki.ClientKey, "--dial-timeout", "3s"}, code: 0},
		{name: "bad --user", args: append([]string{"--user", "nopassword"}, c.etcdArgs()...), code: 1, wantErr: "--user nopassword needs a password: --password, ETCDCTL_PASSWORD"},
		{name: "missing key file", args: []string{"--endpoints", c.etcdURL, "--cacert", c.pki.CA, "--cert", c.pki.ClientCert, "--key", "/nonexistent/client.key"}, code: 1, wantErr: "etcd TLS file"},
		{name: "cert without key", args: []string{"--endpoints", c.etcdURL, "--cert", c.pki.ClientCert}, code: 1, wantErr: "--cert and --key go together"},
		{name: "unreachable endpoint", args: []string{"--endpoints", "127.0.0.1:1", "--dial-timeout", "1s"}, code: 1, wantErr: "is not reachable"},
		{name: "bad prefix", args: append([]string{"--etcd-prefix", "/registry"}, c.etcdArgs()...), code: 2, wantErr: "--etcd-prefix"},
		{name: "etcdctl's --prefix", args: append([]string{"--prefix", "/registry/"}, c.etcdArgs()...), code: 2, wantErr: "give kube-apiserver's key prefix as --etcd-prefix"},
		{name: "unknown flag", args: []string{"--bogus"}, code: 2, wantErr: "unknown flag"},
		{name: "ETCDCTL variables", env: []string{"ETCDCTL_ENDPOINTS=" + c.etcdURL, "ETCDCTL_CACERT=" + c.pki.CA, "ETCDCTL_CERT=" + c.pki.ClientCert, "ETCDCTL_KEY=" + c.pki.ClientKey}, code: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(bins.regghost, append([]string{"scan", "--no-api"}, tt.args...)...)
			cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
			cmd.Env = append(cmd.Env, tt.env...)
			out, _ := cmd.CombinedOutput()
			code := cmd.ProcessState.ExitCode()
			checkWidth(t, append([]string{"scan", "--no-api"}, tt.args...), true, code, "", string(out))
			if code != tt.code {
				t.Fatalf("exit %d, want %d: %s", code, tt.code, out)
			}
			if tt.wantErr == "" {
				return
			}
			lines := strings.Split(strings.TrimSpace(etcdtest.WithoutUsing(string(out))), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "regghost: ") || !strings.Contains(lines[0], tt.wantErr) {
				t.Errorf("want one line containing %q, got:\n%s", tt.wantErr, out)
			}
			if strings.Contains(string(out), "panic") || strings.Contains(string(out), "goroutine") {
				t.Errorf("panic: %s", out)
			}
		})
	}
}
