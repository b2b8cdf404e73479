package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func shellQuote(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// onTerminal runs regghost on a real pseudo-terminal (util-linux script),
// typing answer at its prompt.
func onTerminal(t *testing.T, answer string, args ...string) (string, int) {
	t.Helper()
	if _, err := exec.LookPath("script"); err != nil {
		t.Skip("script (util-linux) is not installed")
	}
	cmd := exec.Command("script", "-qec", shellQuote(append([]string{bins.regghost}, args...)), "/dev/null")
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "KUBECONFIG=")
	cmd.Stdin = strings.NewReader(answer)
	out, _ := cmd.CombinedOutput()
	return string(out), cmd.ProcessState.ExitCode()
}

// TestPurgePromptsOnATerminal: on a terminal purge asks, and only "yes" goes
// on, even when --yes is given.
func TestPurgePromptsOnATerminal(t *testing.T) {
	c := startCluster(t, clusterOptions{})
	want := plantGhosts(t, c)
	ghosts := ghostKeys(want, "kb-system")
	root := filepath.Join(t.TempDir(), "backups")
	args := append([]string{"purge", "--namespace", "kb-system", "--backup-dir", root, "--confirm", "--kubeconfig", c.kubeconfig}, c.etcdArgs()...)
	for _, tt := range []struct {
		name   string
		answer string
		extra  []string
	}{
		{"answer no", "no\n", nil},
		{"--yes does not skip the prompt on a terminal", "n\n", []string{"--yes"}},
		{"no answer", "", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, code := onTerminal(t, tt.answer, append(args, tt.extra...)...)
			if code != 1 || !strings.Contains(out, "Type yes to continue") || !strings.Contains(out, "not confirmed; nothing was changed") {
				t.Errorf("exit %d:\n%s", code, out)
			}
			for _, k := range ghosts {
				if c.value(t, k) == nil {
					t.Fatalf("%s deleted without a yes", k)
				}
			}
		})
	}
	t.Run("answer yes", func(t *testing.T) {
		out, code := onTerminal(t, "yes\n", args...)
		if code != 0 || !strings.Contains(out, "Deleted 5 of 5 planned keys") {
			t.Fatalf("exit %d:\n%s", code, out)
		}
		for _, k := range ghosts {
			if c.value(t, k) != nil {
				t.Errorf("%s still there", k)
			}
		}
	})
}
