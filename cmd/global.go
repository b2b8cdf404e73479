package cmd

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"

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
	errOut    io.Writer
	// backupRoot is the --backup-dir of a command that writes (purge): a
	// namespace that exists nowhere is looked for among its backups too.
	backupRoot string
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
func (g *globalOptions) noteGiven(fs nodeconfig.FlagSet) {
	g.Given = nodeconfig.GivenBy(fs, "ETCDCTL")
}
