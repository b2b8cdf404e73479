package cmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/regghost/regghost/internal/cli"
	"github.com/regghost/regghost/internal/help"
	"github.com/regghost/regghost/pkg/table"
)

// newOverridesCmd prints what an override lets through and what it risks
// (a section of docs/overrides.md, which the binary carries), or the whole
// page: where every refusal that names an override points.
func newOverridesCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "overrides [FLAG]",
		Short: "Print what an override flag (--yes, --accept-impact, ...) lets through and what it risks",
		Args:  cobra.MaximumNArgs(1),
		// FLAG may be given as the flag itself: --accept-impact.
		DisableFlagParsing: true,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
				return c.Help()
			}
			flag := ""
			if len(args) == 1 {
				flag = args[0]
			}
			text, err := help.Override(flag)
			if err != nil {
				return cli.Usage("%v", err)
			}
			_, err = fmt.Fprint(c.OutOrStdout(), help.ForTerminal(text, table.Width(c.OutOrStdout())))
			return err
		},
	}
}
