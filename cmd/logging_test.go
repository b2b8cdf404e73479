package cmd

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/klog/v2"

	"github.com/regghost/regghost/internal/cli"
)

// TestVerbosityAsInKubectl: -v/--v sets the libraries' log level on stderr,
// as kubectl's does; --version stays regghost's version.
func TestVerbosityAsInKubectl(t *testing.T) {
	t.Cleanup(cli.SilenceLibraryLogs)
	for _, tc := range []struct {
		args []string
		code int
		logs bool
	}{
		{[]string{"-v=6", "version"}, ExitOK, true},
		{[]string{"--v", "6", "version"}, ExitOK, true},
		{[]string{"version", "-v=5"}, ExitOK, false},
		{[]string{"version"}, ExitOK, false},
		{[]string{"-v=-1", "version"}, ExitUsage, false},
		{[]string{"-v=8", "version"}, ExitUsage, false},
		{[]string{"-v", "version"}, ExitUsage, false},
	} {
		cli.SilenceLibraryLogs()
		var out, errOut bytes.Buffer
		if code := Run(tc.args, strings.NewReader(""), &out, &errOut); code != tc.code {
			t.Errorf("%v: exit %d, want %d: %s", tc.args, code, tc.code, errOut.String())
			continue
		}
		klog.V(6).Info("a request to the API server")
		klog.Flush()
		if got := strings.Contains(errOut.String(), "a request to the API server"); got != tc.logs {
			t.Errorf("%v: library logs shown %v, want %v: %q", tc.args, got, tc.logs, errOut.String())
		}
	}
	var out, errOut bytes.Buffer
	if code := Run([]string{"--version"}, strings.NewReader(""), &out, &errOut); code != ExitOK || !strings.HasPrefix(out.String(), "regghost ") {
		t.Errorf("--version: exit %d: %q", code, out.String())
	}
}
