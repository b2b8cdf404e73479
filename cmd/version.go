package cmd

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/regghost/regghost/pkg/version"
)

func newVersionCmd() *cobra.Command {
	p := newPrintFlags(false, "table")
	c := &cobra.Command{
		Use:   "version",
		Short: "Print regghost's version, commit, Go version and the etcd and Kubernetes library versions",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := p.validate(); err != nil {
				return err
			}
			info := version.Get()
			return p.print(c.OutOrStdout(), output{doc: info, human: func(w io.Writer, _, _ bool) error {
				fmt.Fprintf(w, "Version:       %s\nCommit:        %s\nGo:            %s\nPlatform:      %s\netcd client:   %s\nKubernetes:    %s\n",
					info.Version, info.Commit, info.GoVersion, info.Platform, info.EtcdClient, info.Kubernetes)
				return nil
			}})
		},
	}
	p.addFlags(c)
	return c
}
