package cmd

import (
	"github.com/spf13/cobra"

	"github.com/regghost/regghost/internal/render"
	"github.com/regghost/regghost/pkg/version"
)

func newVersionCmd() *cobra.Command {
	p := render.NewPrintFlags(false, "table")
	c := &cobra.Command{
		Use:   "version",
		Short: "Print regghost's version and the library versions it was built with",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := p.Validate(); err != nil {
				return err
			}
			info := version.Get()
			return p.Print(c.OutOrStdout(), render.Version(info))
		},
	}
	p.AddFlags(c)
	return c
}
