package cmd

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// foreignFlags are flags other tools have that regghost refuses with the
// name to use: the same word with another meaning would look like success.
var foreignFlags = map[string]string{
	"prefix": "--prefix is not a regghost flag (etcdctl's --prefix is a switch): give kube-apiserver's key prefix as --etcd-prefix (default /registry/)",
}

// renamedFlags are flags renamed in 0.x, refused on the command that had
// them with the name to use (never a hidden alias): one name per kind of
// wait.
var renamedFlags = map[string]struct{ command, hint string }{
	"wait-served": {"regghost recover", "--wait-served is now --wait (how long recover waits for a recovered CRD to be served)"},
	"member-wait": {"regghost space reclaim", "--member-wait is now --wait (how long space reclaim waits for a defragmented member to come back healthy)"},
}

// renamedCommands are commands renamed in 0.x, refused with the name to
// use (never a hidden alias).
var renamedCommands = map[string]string{
	"versions": "versions is now stored-versions (objects per stored version and encryption key; version prints regghost's own)",
}

// valueShapes say what a flag of each type takes, for a value that does not
// parse.
var valueShapes = map[string]string{
	"int":      "a whole number",
	"int64":    "a whole number",
	"uint":     "a whole number",
	"float64":  "a number",
	"duration": "a duration such as 30s, 5m or 1h",
	"bool":     "true or false",
	"quantity": "a size (a whole number of bytes, or a quantity such as 8Gi)",
}

// flagError makes a flag that cannot be used a usage error (exit 2) on one
// line naming the flag and what it takes, never a parser's message.
func flagError(c *cobra.Command, err error) error {
	var nx *pflag.NotExistError
	if errors.As(err, &nx) {
		if hint, ok := foreignFlags[nx.GetSpecifiedName()]; ok {
			return usageError("%s", hint)
		}
		if r, ok := renamedFlags[nx.GetSpecifiedName()]; ok && r.command == c.CommandPath() {
			return usageError("%s", r.hint)
		}
	}
	var iv *pflag.InvalidValueError
	if errors.As(err, &iv) {
		f := iv.GetFlag()
		name := "--" + f.Name
		if f.Name == "v" {
			name = "-v"
		}
		shape := valueShapes[f.Value.Type()]
		if shape == "" {
			shape = "a " + f.Value.Type()
		}
		if f.Name == "v" {
			shape += ", the log level 0 to 7 (-v=6 shows every API server request)"
		}
		return usageError("%s: %q is not %s (see %s --help)", name, iv.GetValue(), shape, c.CommandPath())
	}
	return &exitError{code: ExitUsage, err: fmt.Errorf("%s (see %s --help)", oneLineOf(err.Error()), c.CommandPath())}
}

// checkDurations holds every duration flag given to one rule: a negative
// duration is refused, and so is 0 unless the flag's help says what 0 means
// ("0: never").
func checkDurations(c *cobra.Command) error {
	var err error
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if err != nil || !f.Changed || f.Value.Type() != "duration" {
			return
		}
		d, perr := time.ParseDuration(f.Value.String())
		switch {
		case perr != nil:
		case d < 0:
			err = usageError("--%s must not be negative, got %s", f.Name, d)
		case d == 0 && !strings.Contains(f.Usage, "0:"):
			err = usageError("--%s must be positive, got %s", f.Name, d)
		}
	})
	return err
}
