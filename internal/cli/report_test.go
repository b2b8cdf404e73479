package cli

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/regghost/regghost/pkg/usage"
)

// TestReportExitCodes: a usage error found below cmd/ exits 2 however
// fmt.Errorf wrapped it, an Error its own code (a command that makes one
// has chosen it), anything else 1; each on one line.
func TestReportExitCodes(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		code int
	}{
		{"none", nil, ExitOK},
		{"a plain error", errors.New("etcd is down"), ExitError},
		{"a usage error from a package", usage.Errorf("--force-class: %q is not a class", "x"), ExitUsage},
		{"wrapped", fmt.Errorf("leases: %w", usage.Errorf("--event-ttl too short")), ExitUsage},
		{"a failure the command chose", Failed(usage.Errorf("-o bogus")), ExitError},
		{"an exit code", Exit(ExitGhosts, errors.New("3 keys left")), ExitGhosts},
		{"a Usage", Usage("--top must be 0 or more"), ExitUsage},
		{"a usage mark over an exit code", usage.Mark(Exit(ExitGhosts, errors.New("x"))), ExitUsage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var errOut bytes.Buffer
			if code := Report(&errOut, tc.err); code != tc.code {
				t.Errorf("exit %d, want %d (%s)", code, tc.code, errOut.String())
			}
			if n := bytes.Count(errOut.Bytes(), []byte("\n")); n > 1 {
				t.Errorf("%d lines: %s", n, errOut.String())
			}
		})
	}
}

// TestAgain: the command line that runs a command again holds its words
// and the flags named that were given other than their default, each a
// shell word; --backup-dir unless it is the built-in root.
func TestAgain(t *testing.T) {
	words := []string{"regghost", "members", "replace", "m 1", "--confirm"}
	for _, tc := range []struct {
		name string
		// root is --backup-dir's default: REGGHOST_BACKUP_DIR's, else
		// the built-in root.
		root string
		set  map[string]string
		want string
	}{
		{"nothing given", DefaultBackupRoot, nil, "regghost members replace 'm 1' --confirm"},
		{"a default given again", DefaultBackupRoot, map[string]string{"command-timeout": "5m0s"}, "regghost members replace 'm 1' --confirm"},
		{"a timeout", DefaultBackupRoot, map[string]string{"command-timeout": "20m"}, "regghost members replace 'm 1' --confirm --command-timeout 20m0s"},
		{"a backup dir", DefaultBackupRoot, map[string]string{"backup-dir": "/srv/it's here"}, `regghost members replace 'm 1' --confirm --backup-dir '/srv/it'\''s here'`},
		{"a root from the environment", "/from/env", nil, "regghost members replace 'm 1' --confirm --backup-dir /from/env"},
		{"the built-in root given", "/from/env", map[string]string{"backup-dir": DefaultBackupRoot}, "regghost members replace 'm 1' --confirm"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := pflag.NewFlagSet("x", pflag.ContinueOnError)
			f.Duration("command-timeout", 5*time.Minute, "")
			f.String("backup-dir", tc.root, "")
			for k, v := range tc.set {
				if err := f.Set(k, v); err != nil {
					t.Fatal(err)
				}
			}
			if got := Again(f, words, "backup-dir", "command-timeout", "unknown-flag"); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}
