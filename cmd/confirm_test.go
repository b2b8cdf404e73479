package cmd

import (
	"bytes"
	"strings"
	"testing"

	"github.com/regghost/regghost/internal/cli"
)

// TestPasswordAskerWithoutATerminal asks nothing and says nothing: a command
// that connects then says what to give.
func TestPasswordAskerWithoutATerminal(t *testing.T) {
	var errOut bytes.Buffer
	ask := cli.PasswordAsker(strings.NewReader("hunter2\n"), &errOut, "root")
	if pw, err := ask(); pw != "" || err != nil || errOut.Len() != 0 {
		t.Errorf("asked without a terminal: %q, %v, %q", pw, err, errOut.String())
	}
	// A command that never connects never asks: version with --user.
	var out bytes.Buffer
	if code := Run([]string{"version", "--user", "root"}, strings.NewReader(""), &out, &errOut); code != ExitOK || strings.Contains(errOut.String(), "Password") {
		t.Errorf("version --user root: exit %d, %q", code, errOut.String())
	}
}
