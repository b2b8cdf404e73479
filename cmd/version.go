package cmd

import (
	"github.com/spf13/cobra"

	"github.com/regghost/regghost/internal/render"
	"github.com/regghost/regghost/pkg/version"
)

func newVersionCmd() *cobra.Command {
	return printing(&cobra.Command{Use: "version", Short: "Print regghost's version and the library versions it was built with", Args: cobra.NoArgs},
		render.NewPrintFlags(false, "table"), func([]string) (render.Output, error) { return render.Version(version.Get()), nil })
}
