package cmd

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/regghost/regghost/internal/cli"
	"github.com/regghost/regghost/pkg/members"
)

// TestMembersReplaceRefusesBadInput: bad flags are refused in one line
// with the usage exit code, before anything connects.
func TestMembersReplaceRefusesBadInput(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"pace", []string{"--max-keys-per-second", "-1"}, "--max-keys-per-second must be 0 (no limit) or more, got -1"},
		{"wait", []string{"--wait", "-1s"}, "--wait must not be negative"},
		{"db", []string{"--db", "x.db"}, "drop --db"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			args := append([]string{"members", "replace", "m1", "--endpoints", "127.0.0.1:1", "--dial-timeout", "100ms"}, tt.args...)
			if code := Run(args, strings.NewReader(""), &out, &errOut); code != ExitUsage {
				t.Errorf("exit %d, want %d; stderr: %s", code, ExitUsage, errOut.String())
			}
			lines := strings.Split(strings.TrimSpace(errOut.String()), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], tt.want) {
				t.Errorf("stderr %q, want one line with %q", errOut.String(), tt.want)
			}
		})
	}
}

// TestMembersReplacePace: members replace takes --max-keys-per-second as
// members does (one name, default and help), and hands it to the
// comparisons it makes.
func TestMembersReplacePace(t *testing.T) {
	root := NewRoot(nil, &bytes.Buffer{}, &bytes.Buffer{})
	cmp, _, err := root.Find([]string{"members"})
	if err != nil {
		t.Fatal(err)
	}
	rep, _, err := root.Find([]string{"members", "replace"})
	if err != nil {
		t.Fatal(err)
	}
	a, b := cmp.LocalFlags().Lookup("max-keys-per-second"), rep.LocalFlags().Lookup("max-keys-per-second")
	if a == nil || b == nil || a.Usage != b.Usage || a.DefValue != b.DefValue || a.Value.Type() != b.Value.Type() ||
		b.DefValue != strconv.Itoa(members.DefaultMaxKeysPerSecond) {
		t.Fatalf("--max-keys-per-second: members %+v, members replace %+v", a, b)
	}

	c, o := newMembersReplace(&globalOptions{})
	if err := c.ParseFlags([]string{"--max-keys-per-second", "5000"}); err != nil {
		t.Fatal(err)
	}
	if got := o.compareOptions("m1", nil); got.Reads.MaxKeysPerSecond != 5000 || got.Keys != members.KeysAlways {
		t.Errorf("the comparisons' options: %+v, want 5000 keys a second, every key", got)
	}
}

// TestReplaceAgain: the command a way out names takes the replacement up
// as this run was given it: the --backup-dir its record is under (unless
// the default), and the --command-timeout and --max-keys-per-second the
// time budget was made with; a path the shell would split is quoted.
func TestReplaceAgain(t *testing.T) {
	t.Setenv("REGGHOST_BACKUP_DIR", "")
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"the defaults", nil, "regghost members replace m1 --confirm"},
		{"the default backup directory given", []string{"--backup-dir", cli.DefaultBackupRoot}, "regghost members replace m1 --confirm"},
		{"a backup directory", []string{"--backup-dir", "/srv/evidence"}, "regghost members replace m1 --confirm --backup-dir /srv/evidence"},
		{"a path with a space", []string{"--backup-dir", "/srv/it's here"}, `regghost members replace m1 --confirm --backup-dir '/srv/it'\''s here'`},
		{"time and pace", []string{"--command-timeout", "20m", "--max-keys-per-second", "50000", "--wait", "1s", "--yes", "--password", "secret"},
			"regghost members replace m1 --confirm --command-timeout 20m0s --max-keys-per-second 50000"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := NewRoot(nil, &bytes.Buffer{}, &bytes.Buffer{})
			c, _, err := root.Find([]string{"members", "replace"})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.ParseFlags(tt.args); err != nil {
				t.Fatal(err)
			}
			if got := replaceAgain("m1", c.Flags()); got != tt.want {
				t.Errorf("replaceAgain: %q, want %q", got, tt.want)
			}
		})
	}
}
