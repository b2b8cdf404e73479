// Package e2e tests regghost against a real etcd and a real kube-apiserver,
// both built from the Go module proxy into the Go build cache.
package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Paths of the binaries under test, set by TestMain.
// binaries are the paths of the servers and tools the tests run.
type binaries struct {
	regghost, etcd, etcdutl, kubeAPIServer, kubeControllerManager string
	// etcd35 and etcd36 are older etcd releases, for the version matrix.
	etcd35, etcd36 string
	// kine is k3s's etcd API over SQLite.
	kine string
	// kubectl runs regghost as a kubectl plugin.
	kubectl string
}

// bins are the binaries the tests run; binsFor(t) is what test t runs.
var bins binaries

func TestMain(m *testing.M) {
	if err := buildBinaries(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: build:", err)
		os.Exit(1)
	}
	// A command run without --backup-dir writes where a node would
	// (/var/lib/regghost/backups): here, a directory of this run, never the
	// host's.
	backups, err := os.MkdirTemp("", "regghost-e2e-backups")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	os.Setenv("REGGHOST_BACKUP_DIR", backups)
	code := m.Run()
	os.RemoveAll(backups)
	os.Exit(code)
}

func buildBinaries() error {
	tmp, err := os.MkdirTemp("", "regghost-e2e-bin")
	if err != nil {
		return err
	}
	bins.regghost = filepath.Join(tmp, "regghost")
	if _, err := goCmd("..", "build", "-o", bins.regghost, "."); err != nil {
		return err
	}
	// go tool -n links each tool into the Go build cache once and prints its path.
	for _, b := range []struct {
		dst       *string
		dir, tool string
	}{
		{&bins.etcd, "tools/etcd", "etcd"},
		{&bins.etcdutl, "tools/etcd", "etcdutl"},
		{&bins.kubeAPIServer, "tools/kube-apiserver", "kube-apiserver"},
		{&bins.kubeControllerManager, "tools/kube-apiserver", "kube-controller-manager"},
		{&bins.etcd35, "tools/etcd35", "etcd35"},
		{&bins.etcd36, "tools/etcd36", "etcd36"},
		{&bins.kine, "tools/kine", "kine"},
		{&bins.kubectl, "tools/kube-apiserver", "kubectl"},
	} {
		out, err := goCmd(b.dir, "tool", "-n", b.tool)
		if err != nil {
			return err
		}
		*b.dst = strings.TrimSpace(out)
	}
	return nil
}

func goCmd(dir string, args ...string) (string, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go %s in %s: %v: %s", strings.Join(args, " "), dir, err, errOut.String())
	}
	return out.String(), nil
}

// parallel runs t beside the other parallel tests: most wait on their own
// servers (kube-apiserver's start, a controller, a TTL) more than they use
// the CPU, and each starts its own cluster in its own directories. A test
// run as a flow of another (TestKubernetesReleasesV134 runs flows under one
// release's binaries, one after the other) stays in its parent's order.
// A release's binaries are the test's own (useRelease, binsFor), and
// regghost's environment the cluster's (withEnv). The tests that stay
// serial (they run first, alone) restart etcd members on their freed
// ports, or bound a wait by wall time that another test's load would
// stretch.
func parallel(t *testing.T) {
	if !strings.Contains(t.Name(), "/") {
		t.Parallel()
	}
}
