package e2e

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/regghost/regghost/internal/etcdtest"
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
	checkWidth(t, args, false, cmd.ProcessState.ExitCode(), string(out), "")
	return string(out), cmd.ProcessState.ExitCode()
}

// TestPurgePromptsOnATerminal: on a terminal purge asks, and only "yes" goes
// on; --yes answers yes there too, as the question and its answer say.
func TestPurgePromptsOnATerminal(t *testing.T) {
	parallel(t)
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
	t.Run("--yes answers on a terminal too", func(t *testing.T) {
		// The ghosts back, from the backup the purge above wrote.
		dir := onlyBackupDir(t, root)
		if out, errOut, code := c.regghost(t, "", "restore", dir, "--confirm", "--yes"); code != 0 {
			t.Fatalf("restore: exit %d\n%s\n%s", code, out, errOut)
		}
		out, code := onTerminal(t, "", append(args, "--yes")...)
		if code != 0 || !strings.Contains(out, "yes (--yes)") || strings.Contains(out, "Type yes to continue") || !strings.Contains(out, "Deleted 5 of 5 planned keys") {
			t.Fatalf("exit %d:\n%s", code, out)
		}
		for _, k := range ghosts {
			if c.value(t, k) != nil {
				t.Errorf("%s still there", k)
			}
		}
	})
}

// terminalRun is regghost running on a real pseudo-terminal (util-linux
// script) whose prompts a test answers one at a time, doing what it needs
// to while a question waits: what an operator at the prompt sees, and what
// the cluster does meanwhile.
type terminalRun struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	mu    sync.Mutex
	out   strings.Builder
	read  int // how much of out the last question consumed
	done  chan struct{}
	args  []string // what regghost was run with, for checkWidth
}

// onTerminalInteractive starts regghost on a pseudo-terminal; answer its
// questions with question and answer, then wait.
func onTerminalInteractive(t *testing.T, args ...string) *terminalRun {
	t.Helper()
	// Called in the middle of tests whose other checks must not be
	// skipped with it: util-linux's script is part of every Debian.
	if _, err := exec.LookPath("script"); err != nil {
		t.Fatal("script (util-linux) is not installed: the prompts cannot be answered on a terminal")
	}
	r := &terminalRun{done: make(chan struct{}), args: args}
	r.cmd = exec.Command("script", "-qfec", shellQuote(append([]string{bins.regghost}, args...)), "/dev/null")
	r.cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "KUBECONFIG=")
	var err error
	if r.stdin, err = r.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := r.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	r.cmd.Stderr = r.cmd.Stdout
	if err := r.cmd.Start(); err != nil {
		t.Fatalf("start regghost on a terminal: %v", err)
	}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := stdout.Read(buf)
			r.mu.Lock()
			r.out.Write(buf[:n])
			r.mu.Unlock()
			if err != nil {
				close(r.done)
				return
			}
		}
	}()
	t.Cleanup(func() {
		_ = r.stdin.Close()
		select {
		case <-r.done:
		case <-time.After(10 * time.Second):
			_ = r.cmd.Process.Kill()
		}
		_ = r.cmd.Wait()
	})
	return r
}

// question waits for the next "Type yes to continue" prompt and returns
// what was printed since the last one, the question included.
func (r *terminalRun) question(t *testing.T) string {
	t.Helper()
	const prompt = "Type yes to continue:"
	deadline := time.Now().Add(2 * time.Minute)
	for {
		r.mu.Lock()
		s := r.out.String()
		r.mu.Unlock()
		if i := strings.Index(s[r.read:], prompt); i >= 0 {
			shown := s[r.read : r.read+i+len(prompt)]
			r.read += i + len(prompt)
			return shown
		}
		select {
		case <-r.done:
			t.Fatalf("regghost ended without asking:\n%s", s)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no question after 2 minutes:\n%s", s)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// answer types a line at the prompt.
func (r *terminalRun) answer(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(r.stdin, line+"\n"); err != nil {
		t.Fatalf("type %q: %v", line, err)
	}
}

// wait waits for regghost to end and returns what it printed after the
// last question, and its exit code.
func (r *terminalRun) wait(t *testing.T) (string, int) {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(5 * time.Minute):
		t.Fatal("regghost did not end within 5 minutes")
	}
	_ = r.cmd.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	checkWidth(t, r.args, false, r.cmd.ProcessState.ExitCode(), "", r.out.String())
	return r.out.String()[r.read:], r.cmd.ProcessState.ExitCode()
}

// TestUserPasswordAskedOnlyWhenConnecting: on a terminal, --user (or an
// exported ETCDCTL_USER) asks for the password only when etcd is connected
// to: version and backup ls never ask.
func TestUserPasswordAskedOnlyWhenConnecting(t *testing.T) {
	parallel(t)
	for _, args := range [][]string{{"version", "--user", "root"}, {"backup", "ls", "--user", "root", "--backup-dir", t.TempDir()}} {
		out, code := onTerminal(t, "", args...)
		if code != 0 || strings.Contains(out, "Password for etcd user") {
			t.Errorf("%v: exit %d:\n%s", args, code, out)
		}
	}
	// A command that connects asks (the endpoint is closed: it fails after).
	out, _ := onTerminal(t, "pw\n", "scan", "--user", "root", "--endpoints", "127.0.0.1:1", "--no-api", "--node-root", t.TempDir(), "--dial-timeout", "1s")
	if !strings.Contains(out, "Password for etcd user root") {
		t.Errorf("scan --user root did not ask:\n%s", out)
	}
}

// TestInterruptAtThePasswordPrompt: members replace catches interrupts
// (a stop never changes the member list half way), so it asks the password
// before it does: Ctrl-C at the prompt ends it.
func TestInterruptAtThePasswordPrompt(t *testing.T) {
	parallel(t)
	r := onTerminalInteractive(t, "members", "replace", "8e9e05c52164694d", "--user", "root", "--endpoints", "127.0.0.1:1",
		"--node-root", t.TempDir(), "--dial-timeout", "1s")
	waitFor(t, time.Minute, "the password prompt", func() error {
		r.mu.Lock()
		defer r.mu.Unlock()
		if !strings.Contains(r.out.String(), "Password for etcd user root") {
			return fmt.Errorf("printed %q", r.out.String())
		}
		return nil
	})
	if _, err := io.WriteString(r.stdin, "\x03"); err != nil {
		t.Fatalf("type Ctrl-C: %v", err)
	}
	select {
	case <-r.done:
	case <-time.After(15 * time.Second):
		t.Fatal("members replace did not end on Ctrl-C at the password prompt")
	}
	_ = r.cmd.Wait()
	if code := r.cmd.ProcessState.ExitCode(); code == 0 {
		t.Errorf("exit 0 after Ctrl-C")
	}
}

// TestErrorsWrapOnATerminal: a refusal longer than the screen is one line
// through a pipe (scripts, logs) and wrapped on a terminal, every line
// within 120 columns (checkWidth holds onTerminal's output to it).
func TestErrorsWrapOnATerminal(t *testing.T) {
	parallel(t)
	args := []string{"scan", "--namespace", "Not_A_Name", "--no-api", "--endpoints", "127.0.0.1:1", "--node-root", t.TempDir()}
	_, errOut, code := runBinary(t, "", args...)
	if code != 2 || strings.Count(strings.TrimSpace(etcdtest.WithoutUsing(errOut)), "\n") != 0 || len(errOut) <= maxColumns {
		t.Fatalf("through a pipe: exit %d, want one line over %d columns:\n%s", code, maxColumns, errOut)
	}
	out, code := onTerminal(t, "", args...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 2 || len(lines) < 2 || !strings.HasPrefix(lines[0], "regghost: --namespace") || !strings.HasPrefix(lines[1], "  ") {
		t.Errorf("on a terminal: exit %d, want the refusal wrapped:\n%s", code, out)
	}
}
