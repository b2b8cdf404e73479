package e2e

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// demoStep is one command make demo shows ("$ cmd"), what it printed
// (stdout and stderr as a person sees them) and its exit code.
type demoStep struct {
	cmd  string
	out  []string
	code int
}

var demoExit = regexp.MustCompile(`^\(exit code ([0-9]+)\)$`)

// demoSteps splits make demo's output into the commands it shows: a step
// starts at "$ " and ends at the next one or at a "==> " narration.
func demoSteps(out string) []*demoStep {
	var steps []*demoStep
	var cur *demoStep
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(l, "$ "):
			cur = &demoStep{cmd: l[2:]}
			steps = append(steps, cur)
		case strings.HasPrefix(l, "==> "):
			cur = nil
		case cur == nil:
		case demoExit.MatchString(l):
			cur.code, _ = strconv.Atoi(demoExit.FindStringSubmatch(l)[1])
			cur.out = append(cur.out, l)
		default:
			cur.out = append(cur.out, l)
		}
	}
	for _, s := range steps {
		for len(s.out) > 0 && strings.TrimSpace(s.out[len(s.out)-1]) == "" {
			s.out = s.out[:len(s.out)-1]
		}
	}
	return steps
}

// text is the step as a guide shows it: its output, and for a step shown
// with the one before (a cat after a purge), its command too.
func (s *demoStep) text(withCmd bool) string {
	t := strings.Join(s.out, "\n")
	if withCmd {
		t = "$ " + s.cmd + "\n" + t
	}
	return t
}

// TestDemo runs `make demo`'s script as a newcomer does on a fresh
// machine, and holds to what it prints every guide block captured from it:
// the force-deleted namespace end to end (scan, the dry run, the refused
// and the confirmed purge, the scan and the purge after it, the restore),
// the exporter's series, and the backup list. The demo's directory is
// shown as a node's.
func TestDemo(t *testing.T) {
	parallel(t)
	// The demo's directory is as long as /var/lib/regghost, so its
	// backups' tables are laid out as on a node.
	dir := "/tmp/rgdemo" + fmt.Sprintf("%06x", rand.Uint32()>>8)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	cmd := exec.Command("bash", "../hack/demo.sh")
	// A newcomer's shell: nothing of this run's settings (etcd's, regghost's
	// backup directory) reaches the demo.
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "ETCDCTL_") && !strings.HasPrefix(e, "REGGHOST_") && !strings.HasPrefix(e, "KUBECONFIG=") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	cmd.Env = append(cmd.Env, "DEMO_DIR="+dir)
	// The demo's servers are its children: a test that ends early takes
	// them down with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	t.Cleanup(func() {
		if cmd.Process != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	})
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Run(); err != nil {
		t.Fatalf("make demo: %v\n%s", err, buf.String())
	}
	// As a node shows them: backups in /var/lib/regghost/backups, the
	// reviewed plan in the working directory, the demo's certificates in
	// a short directory of their own.
	shown := strings.NewReplacer(dir+"/backups", "/var/lib/regghost/backups", dir+"/plan.json", "plan.json",
		dir, "/tmp/regghost-demo", "bin/regghost", "regghost").Replace(buf.String())
	steps := demoSteps(shown)
	at := 0
	// next is the first step from the last one found on whose command
	// starts with prefix.
	next := func(prefix string) *demoStep {
		t.Helper()
		for i := at; i < len(steps); i++ {
			if strings.HasPrefix(steps[i].cmd, prefix) {
				at = i + 1
				return steps[i]
			}
		}
		t.Fatalf("make demo shows no %q after step %d:\n%s", prefix, at, shown)
		return nil
	}
	for _, s := range steps {
		if args := strings.Fields(s.cmd); len(args) > 1 && args[0] == "regghost" && !machineOutput(args[1:]) {
			out := s.out
			if s.code != 0 { // the demo's "(exit code N)" after the final error
				out = out[:len(out)-1]
			}
			checkWidth(t, args[1:], true, s.code, "", strings.Join(out, "\n"))
		}
	}

	next("curl -s") // the exporter before the incident
	scan := next("regghost scan")
	checkCapture(t, "scan", scan.code, scan.text(false))
	next("regghost history")
	exp := next("curl -s")
	checkCapture(t, "exporter-after-incident", 0, exp.text(false))
	dry := next("regghost purge --namespace kb-system")
	checkCapture(t, "purge-dry-run", dry.code, dry.text(false))
	refused := next("regghost purge --namespace kb-system --from")
	checkCapture(t, "purge-refused", refused.code, refused.text(false))
	purged := next("regghost purge --namespace kb-system --from")
	cat := next("cat ")
	checkCapture(t, "purge-retain", purged.code, purged.text(false), "\n"+cat.text(true))
	exp = next("curl -s")
	checkCapture(t, "exporter-after-purge", 0, exp.text(false))
	ls := next("regghost backup ls")
	checkCapture(t, "backup-ls", ls.code, ls.text(false))
	after := next("regghost scan --namespace kb-system")
	checkCapture(t, "scan-after-purge", after.code, after.text(false))
	nothing := next("regghost purge --namespace kb-system")
	checkCapture(t, "purge-nothing", nothing.code, nothing.text(false))
	// What the captures cannot say, numbers being set aside there.
	if !strings.Contains(after.text(false), "Ghosts: 0") || !strings.Contains(nothing.text(false), "No ghost to purge") ||
		strings.Contains(exp.text(false), `regghost_ghosts{namespace="kb-system"}`) {
		t.Errorf("after the purge, kb-system still has ghosts:\n%s\n%s\n%s", exp.text(false), after.text(false), nothing.text(false))
	}
	next("regghost backup show")
	restore := next("regghost restore")
	bound := next("curl .../api/v1/persistentvolumes/")
	checkCapture(t, "restore", restore.code, restore.text(true), "\n"+bound.text(true))
}
