package cmd

import (
	"strings"

	"github.com/spf13/cobra"
)

// completing is g as a completion reads the cluster (cli.Completions).
type completing struct{ *globalOptions }

// Ready notes which settings were given as flags, as a run does, and
// silences the notices: a completion prints nothing but its words.
func (g completing) Ready(c *cobra.Command) string {
	g.noteGiven(c.Root().PersistentFlags())
	g.errOut, g.Notices = &strings.Builder{}, nil
	return g.Prefix
}
