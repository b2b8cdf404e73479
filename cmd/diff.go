package cmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/regghost/regghost/pkg/dbfile"
)

func newDiffCmd(g *globalOptions) *cobra.Command {
	var output string
	c := &cobra.Command{
		Use:   "diff A.db B.db",
		Short: "Show keys that appeared, vanished or changed between two etcd db files",
		Example: `  regghost diff before-purge.db after-purge.db
  regghost diff /var/lib/regghost/backups/<dir>/snapshot.db now.db -o json`,
		Args: cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			if output != "table" && output != "json" {
				return usageError("--output %q is not one of table, json", output)
			}
			a, err := dbfile.Open(args[0])
			if err != nil {
				return err
			}
			defer a.Close()
			b, err := dbfile.Open(args[1])
			if err != nil {
				return err
			}
			defer b.Close()
			changes, err := dbfile.Diff(c.Context(), a, b, g.prefix)
			if err != nil {
				return err
			}
			out := c.OutOrStdout()
			if output == "json" {
				return printStructured(out, "json", nonNil(changes))
			}
			counts := map[string]int{}
			if len(changes) > 0 {
				t := newTable(out, "KEY", "CHANGE", "REV A", "REV B", "BYTES A", "BYTES B")
				for _, ch := range changes {
					counts[ch.Kind]++
					_ = t.Append([]string{ch.Key, ch.Kind, fmt.Sprint(ch.RevA), fmt.Sprint(ch.RevB), fmt.Sprint(ch.SizeA), fmt.Sprint(ch.SizeB)})
				}
				if err := t.Render(); err != nil {
					return err
				}
			}
			fmt.Fprintf(out, "%s (revision %d, %d keys) -> %s (revision %d, %d keys): %d added, %d removed, %d changed under %s\n",
				args[0], a.Revision(), a.Len(), args[1], b.Revision(), b.Len(), counts["added"], counts["removed"], counts["changed"], g.prefix)
			return nil
		},
	}
	c.Flags().StringVarP(&output, "output", "o", "table", "output format: table or json")
	return c
}
