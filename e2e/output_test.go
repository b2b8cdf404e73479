package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/regghost/regghost/pkg/etcdscan"
)

// TestKubectlPlugin: installed on PATH as kubectl-regghost, regghost runs
// as `kubectl regghost …` under a real kubectl built from k8s.io/kubernetes,
// with its arguments and exit code passed through.
func TestKubectlPlugin(t *testing.T) {
	parallel(t)
	c := startCluster(t, clusterOptions{})
	want := plantGhosts(t, c)
	dir := t.TempDir()
	mustNoErr(t, "install the plugin", os.Symlink(bins.regghost, filepath.Join(dir, "kubectl-regghost")))
	kubectl := func(args ...string) (string, string, int) {
		cmd := exec.Command(binsFor(t).kubectl, args...)
		cmd.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"), "HOME="+t.TempDir(), "KUBECONFIG="+c.kubeconfig)
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("kubectl: %v", err)
		}
		return out.String(), errOut.String(), code
	}
	if out, errOut, code := kubectl("plugin", "list"); code != 0 || !strings.Contains(out, "kubectl-regghost") {
		t.Errorf("kubectl plugin list: exit %d: %s%s", code, out, errOut)
	}
	out, errOut, code := kubectl(append([]string{"regghost", "scan", "-o", "json", "--terminating-after", "1ns", "--kubeconfig", c.kubeconfig}, c.etcdArgs()...)...)
	if code != 3 {
		t.Fatalf("kubectl regghost scan: exit %d: %s", code, errOut)
	}
	var rep etcdscan.Report
	mustNoErr(t, "decode the plugin's report", json.Unmarshal([]byte(out), &rep))
	assertFindings(t, &rep, want)
	if out, _, code := kubectl("regghost", "--version"); code != 0 || !strings.HasPrefix(out, "regghost ") {
		t.Errorf("kubectl regghost --version: exit %d: %s", code, out)
	}
}

// TestPurgeJSONOnATerminal: on a real terminal, `purge --confirm -o json`
// asks on the terminal and keeps stdout one valid JSON document, with the
// plan and the question nowhere in it.
func TestPurgeJSONOnATerminal(t *testing.T) {
	parallel(t)
	if _, err := exec.LookPath("script"); err != nil {
		t.Skip("script (util-linux) is not installed")
	}
	c := startCluster(t, clusterOptions{})
	want := plantGhosts(t, c)
	root := filepath.Join(t.TempDir(), "backups")
	stdout := filepath.Join(t.TempDir(), "purge.json")
	args := append([]string{bins.regghost, "purge", "--namespace", "kb-system", "--backup-dir", root, "--confirm", "-o", "json", "--kubeconfig", c.kubeconfig}, c.etcdArgs()...)
	cmd := exec.Command("script", "-qec", shellQuote(args)+" > "+shellQuote([]string{stdout}), "/dev/null")
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "KUBECONFIG=")
	cmd.Stdin = strings.NewReader("yes\n")
	terminal, _ := cmd.CombinedOutput()
	checkWidth(t, []string{"purge", "--namespace", "kb-system"}, false, cmd.ProcessState.ExitCode(), "", string(terminal))
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("purge: exit %d: %s", code, terminal)
	}
	if !strings.Contains(string(terminal), "Type yes to continue") {
		t.Errorf("the question was not asked on the terminal:\n%s", terminal)
	}
	data, err := os.ReadFile(stdout)
	mustNoErr(t, "read stdout", err)
	var res struct {
		Deleted int `json:"deleted"`
		Planned int `json:"planned"`
	}
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatalf("stdout is not one JSON document (%v):\n%s", err, data)
	}
	if res.Deleted != 5 || res.Planned != 5 || strings.Contains(string(data), "Type yes") {
		t.Errorf("result %+v:\n%s", res, data)
	}
	for _, k := range ghostKeys(want, "kb-system") {
		if c.value(t, k) != nil {
			t.Errorf("%s still there", k)
		}
	}
}
