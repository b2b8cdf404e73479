package nodeconfig

import etcdflags "go.etcd.io/etcd/pkg/v3/flags"

// FlagSet is what GivenBy asks of a command's flags (a *pflag.FlagSet).
type FlagSet interface {
	// Changed says whether the flag was set, on the command line or since.
	Changed(name string) bool
}

// GivenBy records which of Flags fs had from the command line when called,
// before the envPrefix_* variables (ETCDCTL_ENDPOINTS, ...) fill the
// others, and returns what names, for each setting given explicitly, the
// flag or variable it came from: a setting changed after the call came
// from its variable.
func GivenBy(fs FlagSet, envPrefix string) func() Given {
	onCommandLine := map[string]bool{}
	for _, name := range Flags {
		onCommandLine[name] = fs.Changed(name)
	}
	return func() Given {
		out := Given{}
		for _, name := range Flags {
			switch {
			case onCommandLine[name]:
				out[name] = "--" + name
			case fs.Changed(name):
				out[name] = etcdflags.FlagToEnv(envPrefix, name)
			}
		}
		return out
	}
}
