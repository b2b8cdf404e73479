package cmd

import (
	"bytes"
	"strings"
	"testing"

	"github.com/regghost/regghost/pkg/session"
)

// TestSpillSettingRefused: a REGGHOST_SPILL_AFTER that is not a count of
// findings stops every command that scans before it connects: one line,
// exit 2, nothing on stdout.
func TestSpillSettingRefused(t *testing.T) {
	for _, cmd := range []string{"scan", "serve", "purge", "stored-versions", "dangling"} {
		for _, v := range []string{"abc", "0", "-3", "1.5"} {
			t.Run(cmd+" "+v, func(t *testing.T) {
				t.Setenv(session.SpillAfterEnv, v)
				var out, errOut bytes.Buffer
				code := Run([]string{cmd, "--endpoints", "127.0.0.1:1", "--no-api"}, strings.NewReader(""), &out, &errOut)
				if code != 2 || out.Len() != 0 || strings.Count(errOut.String(), "\n") != 1 || !strings.Contains(errOut.String(), session.SpillAfterEnv+`="`+v+`"`) {
					t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 and one line naming %s", code, out.String(), errOut.String(), session.SpillAfterEnv)
				}
			})
		}
	}
}
