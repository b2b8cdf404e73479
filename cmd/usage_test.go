package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestUsageErrorsExit2OnOneLine holds the README's contract: a usage
// error (a wrong count of arguments, an unknown command, at the top or in
// a group, an unknown flag) exits 2 with one line. Every command of the
// tree is run with no argument and with too many; whichever its argument
// check refuses must be refused so.
func TestUsageErrorsExit2OnOneLine(t *testing.T) {
	var walk func(c *cobra.Command, path []string)
	type leaf struct {
		path []string
		cmd  *cobra.Command
	}
	var leaves []leaf
	walk = func(c *cobra.Command, path []string) {
		if c.Runnable() && len(path) > 0 {
			leaves = append(leaves, leaf{path, c})
		}
		for _, sub := range c.Commands() {
			if !sub.Hidden && sub.Name() != "help" && sub.Name() != "completion" {
				walk(sub, append(append([]string{}, path...), sub.Name()))
			}
		}
	}
	walk(NewRoot(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{}), nil)
	refused := 0
	for _, l := range leaves {
		for _, extra := range [][]string{nil, {"a1", "a2", "a3", "a4", "a5", "a6"}} {
			// Only what the command's own check refuses is run (a count it
			// takes would start the command: serve would serve).
			if l.cmd.Args == nil || l.cmd.Args(l.cmd, extra) == nil {
				continue
			}
			args := append(append(append([]string{}, l.path...), extra...), "--endpoints", "127.0.0.1:1", "--dial-timeout", "1ms", "--no-api")
			var out, errOut bytes.Buffer
			code := Run(args, strings.NewReader(""), &out, &errOut)
			msg := errOut.String()
			if !strings.Contains(msg, " arg(s)") && !strings.Contains(msg, "unknown command") {
				continue
			}
			refused++
			if code != ExitUsage || strings.Count(strings.TrimSpace(msg), "\n") != 0 {
				t.Errorf("%v: exit %d, want %d on one line:\n%s", args, code, ExitUsage, msg)
			}
		}
	}
	for _, args := range [][]string{{"frobnicate"}, {"scn"}, {"backup", "frob"}, {"members", "frob"}, {"snapshot", "frob"}, {"scan", "--nope"}} {
		var out, errOut bytes.Buffer
		if code := Run(args, strings.NewReader(""), &out, &errOut); code != ExitUsage || strings.Count(strings.TrimSpace(errOut.String()), "\n") != 0 {
			t.Errorf("%v: exit %d, want %d on one line:\n%s%s", args, code, ExitUsage, errOut.String(), out.String())
		}
	}
	if refused < 10 {
		t.Errorf("only %d argument refusals were seen: the walk did not reach the commands", refused)
	}
}

// TestFlagMistakesNameTheFlag: a flag value that does not parse, or a flag
// another tool has (etcdctl's --prefix), is a usage error on one line that
// names the flag and what it takes; never a parser's message, never the
// root help with exit 0.
func TestFlagMistakesNameTheFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--prefix", "ls"}, "give kube-apiserver's key prefix as --etcd-prefix"},
		{[]string{"scan", "--prefix", "/registry/pods/"}, "give kube-apiserver's key prefix as --etcd-prefix"},
		{[]string{"versions", "-n", "lab"}, "versions is now stored-versions"},
		{[]string{"recover", "--wait-served", "2m"}, "--wait-served is now --wait"},
		{[]string{"space", "reclaim", "--member-wait", "2m"}, "--member-wait is now --wait"},
		{[]string{"scan", "--prefix=/registry/pods/"}, "give kube-apiserver's key prefix as --etcd-prefix"},
		{[]string{"-v", "scan"}, `-v: "scan" is not a whole number, the log level 0 to 7`},
		{[]string{"scan", "--command-timeout", "5"}, `--command-timeout: "5" is not a duration such as 30s`},
		{[]string{"unstick", "ns/x", "--command-timeout", "2s"}, "--command-timeout 2s leaves no time for the wait for the deletion (--wait, 2m0s by default)"},
		{[]string{"unstick", "ns/x", "--wait", "10m"}, "--wait 10m0s must be shorter than --command-timeout (5m0s)"},
		{[]string{"space", "reclaim", "--quota-backend-bytes", "8Gx"}, `--quota-backend-bytes: "8Gx" is not a size (a whole number of bytes, or a quantity such as 8Gi)`},
		{[]string{"space", "reclaim", "--quota-backend-bytes", "100m"}, `--quota-backend-bytes: "100m" is not a size (a whole number of bytes`},
		{[]string{"space", "reclaim", "--quota-backend-bytes", "1.5"}, `--quota-backend-bytes: "1.5" is not a size (a whole number of bytes`},
		{[]string{"space", "reclaim", "--quota-backend-bytes", "1.5Gi", "--wait", "-1s"}, "--wait must not be negative"},
	} {
		var out, errOut bytes.Buffer
		code := Run(tc.args, strings.NewReader(""), &out, &errOut)
		msg := errOut.String()
		if code != ExitUsage || !strings.Contains(msg, tc.want) || strings.Contains(msg, "strconv") || strings.Count(strings.TrimSpace(msg), "\n") != 0 {
			t.Errorf("%v: exit %d\n%s%s", tc.args, code, msg, out.String())
		}
	}
}

// TestGivenKubeconfigThatCannotBeUsed: a --kubeconfig or --context the
// user gave that cannot be used is a usage error, never a silent fallback
// to verdicts from etcd alone.
func TestGivenKubeconfigThatCannotBeUsed(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\nusers: [{name: u, user: {}}]\ncontexts: [{name: ctx, context: {cluster: c, user: u}}]\ncurrent-context: ctx\n"
	if err := os.WriteFile(kc, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"scan", "--kubeconfig", "/nonexistent"}, "--kubeconfig /nonexistent cannot be used"},
		{[]string{"scan", "--kubeconfig", kc, "--context", "nope"}, "--context nope cannot be used"},
	} {
		var out, errOut bytes.Buffer
		code := Run(append(tc.args, "--endpoints", "127.0.0.1:1", "--dial-timeout", "1ms"), strings.NewReader(""), &out, &errOut)
		if code != ExitUsage || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%v: exit %d\n%s%s", tc.args, code, errOut.String(), out.String())
		}
	}
}

// TestLsTakesOutputAsEveryListing: ls takes -o name|wide as every listing
// takes -o (no --long of its own).
func TestLsTakesOutputAsEveryListing(t *testing.T) {
	_, ep, _ := goldenSnapshot(t)
	var out, errOut bytes.Buffer
	if code := Run([]string{"ls", "/registry/pods/shop/", "-o", "wide", "--endpoints", ep}, strings.NewReader(""), &out, &errOut); code != ExitOK ||
		!strings.Contains(out.String(), "/registry/pods/shop/stuck\t") {
		t.Errorf("ls -o wide: exit %d\n%s%s", code, errOut.String(), out.String())
	}
	out.Reset()
	errOut.Reset()
	if code := Run([]string{"ls", "--long", "--endpoints", ep}, strings.NewReader(""), &out, &errOut); code != ExitUsage {
		t.Errorf("ls --long: exit %d", code)
	}
	if code := Run([]string{"ls", "-o", "json", "--endpoints", ep}, strings.NewReader(""), &out, &errOut); code != ExitUsage {
		t.Errorf("ls -o json: exit %d", code)
	}
}

// TestEveryOutputRefusesAFormatItLacks: every command with -o refuses a
// format it does not print on one line, exit 2, before it reads anything
// (runE checks -o before the command's own flag checks).
func TestEveryOutputRefusesAFormatItLacks(t *testing.T) {
	var checked []string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		for _, sub := range c.Commands() {
			walk(sub, append(append([]string{}, path...), sub.Name()))
		}
		if !c.Runnable() || c.Flags().Lookup("output") == nil {
			return
		}
		args := []string{}
		for _, try := range [][]string{nil, {"a1"}, {"a1", "a2"}} {
			if c.Args == nil || c.Args(c, try) == nil {
				args = try
				break
			}
		}
		if c.Name() == "unstick" {
			args = []string{"namespace", "x"}
		}
		argv := append(append(append([]string{}, path...), args...), "-o", "bogus", "--endpoints", "127.0.0.1:1", "--dial-timeout", "1ms", "--no-api")
		var out, errOut bytes.Buffer
		code := Run(argv, strings.NewReader(""), &out, &errOut)
		msg := strings.TrimSpace(errOut.String())
		if code != ExitUsage || strings.Count(msg, "\n") != 0 || !strings.Contains(msg, `"bogus"`) || out.Len() != 0 {
			t.Errorf("%v: exit %d, want %d and one line naming the format:\n%s%s", argv, code, ExitUsage, errOut.String(), out.String())
		}
		checked = append(checked, strings.Join(path, " "))
	}
	walk(NewRoot(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{}), nil)
	if len(checked) < 18 {
		t.Errorf("only %d commands with -o were checked: %v", len(checked), checked)
	}
}

// The commands whose run bounds its own steps (ownDeadline): every other
// run is bounded by --command-timeout from its start.
var (
	_ ownDeadline = (*serveOptions)(nil)
	_ ownDeadline = (*spaceReclaimOptions)(nil)
	_ ownDeadline = (*membersReplaceOptions)(nil)
	_ ownDeadline = (*restoreOptions)(nil)
	_ ownDeadline = (*snapshotRestoreOptions)(nil)
	_ ownDeadline = (*diffOptions)(nil)
)
