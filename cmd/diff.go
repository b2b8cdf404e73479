package cmd

import (
	"github.com/spf13/cobra"

	"github.com/regghost/regghost/internal/render"
	"github.com/regghost/regghost/pkg/dbfile"
)

func newDiffCmd(g *globalOptions) *cobra.Command {
	p := render.NewPrintFlags(true, "table")
	var values bool
	c := &cobra.Command{
		Use:   "diff A.db B.db",
		Short: "Show keys that appeared, vanished or changed between two etcd db files",
		Args:  cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			if err := p.Validate(); err != nil {
				return err
			}
			a, err := g.OpenDB(args[0])
			if err != nil {
				return err
			}
			defer a.Close()
			b, err := g.OpenDB(args[1])
			if err != nil {
				return err
			}
			defer b.Close()
			var changes []dbfile.Change
			err = dbfile.Diff(c.Context(), a, b, dbfile.DiffOptions{Prefix: g.Prefix, Values: values}, func(ch dbfile.Change) error {
				changes = append(changes, ch)
				return nil
			})
			if err != nil {
				return err
			}
			return p.Print(c.OutOrStdout(), render.Diff(args[0], args[1], a, b, changes, g.Prefix))
		},
	}
	p.AddFlags(c)
	c.Flags().BoolVar(&values, "values", false, "include both sides' stored bytes in -o json/yaml (default: their sha256)")
	return c
}
