package cmd

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"

	etcdflags "go.etcd.io/etcd/pkg/v3/flags"

	"github.com/regghost/regghost/pkg/nodeconfig"
	"github.com/regghost/regghost/pkg/session"
)

// globalOptions are the flags every command shares: how to reach the
// cluster (session.Settings) and where discovery's settings came from.
type globalOptions struct {
	session.Settings
	cpuProfile string
	// verbosity is -v: the libraries' log level on stderr.
	verbosity int
	// flags are the command's flags, and onCommandLine the settings given
	// as flags before ETCDCTL_* variables filled the others (noteGiven):
	// discovery leaves every setting given alone and says where it came from.
	flags         flagSet
	onCommandLine map[string]bool
	errOut        io.Writer
	// backupRoot is the --backup-dir of a command that writes (purge): a
	// namespace that exists nowhere is looked for among its backups too.
	backupRoot string
}

// flagSet is what discovery asks of the command's flags (a *pflag.FlagSet).
type flagSet interface {
	// Changed says whether the flag was set, on the command line or since.
	Changed(name string) bool
}

func (g *globalOptions) startProfile() error {
	if g.cpuProfile == "" {
		return nil
	}
	f, err := os.Create(g.cpuProfile)
	if err != nil {
		return fmt.Errorf("cpu profile: %w", err)
	}
	return pprof.StartCPUProfile(f)
}

// noteGiven records which of the settings discovery fills were given as
// flags. It runs before the ETCDCTL_* variables are applied: a setting
// changed after that came from its variable.
func (g *globalOptions) noteGiven(fs flagSet) {
	g.flags, g.onCommandLine = fs, map[string]bool{}
	for _, name := range nodeconfig.Flags {
		g.onCommandLine[name] = fs.Changed(name)
	}
	g.Given = g.given
}

// given names, for each setting given explicitly, the flag or ETCDCTL_*
// variable it came from.
func (g *globalOptions) given() nodeconfig.Given {
	out := nodeconfig.Given{}
	for _, name := range nodeconfig.Flags {
		switch {
		case g.onCommandLine[name]:
			out[name] = "--" + name
		case g.flags.Changed(name):
			out[name] = etcdflags.FlagToEnv("ETCDCTL", name)
		}
	}
	return out
}

func oneLine(err error) string {
	line, _, _ := strings.Cut(err.Error(), "\n")
	return line
}
