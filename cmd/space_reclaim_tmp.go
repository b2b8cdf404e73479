package cmd

import "github.com/spf13/cobra"

// newTempSpaceCmd is a stand-in for `regghost space` until the space report
// (cmd/space.go) lands: it only holds reclaim. When merging, delete this
// file and its line in root.go, and add newSpaceReclaimCmd(g) under space.
func newTempSpaceCmd(g *globalOptions) *cobra.Command {
	c := &cobra.Command{Use: "space", Short: "etcd's space (reclaim)"}
	c.AddCommand(newSpaceReclaimCmd(g))
	return c
}
