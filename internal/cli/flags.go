package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
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

// FlagError is the root's FlagErrorFunc: a flag that cannot be used is a
// usage error (exit 2) on one line naming the flag and what it takes, never
// a parser's message.
func FlagError(c *cobra.Command, err error) error {
	var nx *pflag.NotExistError
	if errors.As(err, &nx) {
		if hint, ok := foreignFlags[nx.GetSpecifiedName()]; ok {
			return Usage("%s", hint)
		}
		if r, ok := renamedFlags[nx.GetSpecifiedName()]; ok && r.command == c.CommandPath() {
			return Usage("%s", r.hint)
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
		return Usage("%s: %q is not %s (see %s --help)", name, iv.GetValue(), shape, c.CommandPath())
	}
	return Exit(ExitUsage, fmt.Errorf("%s (see %s --help)", OneLine(err.Error()), c.CommandPath()))
}

// CheckDurations holds every duration flag given to one rule: a negative
// duration is refused, and so is 0 unless the flag's help says what 0 means
// ("0: never").
func CheckDurations(c *cobra.Command) error {
	var err error
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if err != nil || !f.Changed || f.Value.Type() != "duration" {
			return
		}
		d, perr := time.ParseDuration(f.Value.String())
		switch {
		case perr != nil:
		case d < 0:
			err = Usage("--%s must not be negative, got %s", f.Name, d)
		case d == 0 && !strings.Contains(f.Usage, "0:"):
			err = Usage("--%s must be positive, got %s", f.Name, d)
		}
	})
	return err
}

// UsageArgs makes every command's wrong count of arguments a usage error
// (exit 2, one line naming the command), as bad flags are.
func UsageArgs(c *cobra.Command) {
	if orig := c.Args; orig != nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := orig(cmd, args); err != nil {
				var ee *Error
				if errors.As(err, &ee) {
					return err
				}
				return Usage("%s: %v (usage: %s)", strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" "), err, cmd.UseLine())
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		UsageArgs(sub)
	}
}

// UnknownInGroup says, for a group ("backup", "members") given a word it
// does not know, that it is a mistyped command (never the group's help
// and exit 0), and returns true; false for any other args.
func UnknownInGroup(root *cobra.Command, args []string, errOut io.Writer) bool {
	c, rest, err := root.Find(args)
	if err != nil || !c.HasParent() || !c.HasSubCommands() || c.Runnable() || len(rest) == 0 || strings.HasPrefix(rest[0], "-") {
		return false
	}
	fmt.Fprintf(errOut, "regghost: unknown command %q for %q (see %s --help)\n", rest[0], c.CommandPath(), c.CommandPath())
	return true
}

// ShadowEnvByFlags drops, for this process, each <prefix>_<FLAG> variable
// whose flag was given on the command line: the flag wins, as the one line
// about the connection then says.
func ShadowEnvByFlags(fs *pflag.FlagSet, prefix string) {
	// VisitAll: cobra parses into the command's own flag set, so the root's
	// knows a flag was given only by the flag's Changed.
	fs.VisitAll(func(f *pflag.Flag) {
		if !f.Changed {
			return
		}
		name := prefix + "_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if _, ok := os.LookupEnv(name); ok {
			_ = os.Unsetenv(name)
		}
	})
}

// EnvOr is the environment variable name's value, def when it is unset or
// empty.
func EnvOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
