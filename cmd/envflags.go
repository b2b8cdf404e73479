package cmd

import (
	"os"
	"strings"

	"github.com/spf13/pflag"
)

// shadowEnvByFlags drops, for this process, each <prefix>_<FLAG> variable
// whose flag was given on the command line: the flag wins, as the one line
// about the connection then says.
func shadowEnvByFlags(fs *pflag.FlagSet, prefix string) {
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
