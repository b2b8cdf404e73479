package cmd

import (
	"context"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/regghost/regghost/internal/cli"
	"github.com/regghost/regghost/internal/render"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/session"
)

type versionsOptions struct {
	noCompletion
	namespace string
	*render.PrintFlags
}

func newVersionsCmd(g *globalOptions) *cobra.Command {
	o := &versionsOptions{PrintFlags: render.NewPrintFlags(true, "table")}
	c := &cobra.Command{
		Use:   "stored-versions",
		Short: "Count objects per stored version; find versions nobody can read",
		Args:  cobra.NoArgs,
		RunE:  runE(g, o),
	}
	c.Flags().StringVarP(&o.namespace, "namespace", "n", "", "count only this namespace's objects")
	o.AddFlags(c)
	return c
}

func (o *versionsOptions) validate(*globalOptions) error {
	if err := validateScanInput(o.namespace); err != nil {
		return err
	}
	return nil
}

func (o *versionsOptions) run(ctx context.Context, g *globalOptions, s genericiooptions.IOStreams) error {
	rep, err := g.Scan(ctx, session.ScanReads(), g.scanning(session.ScanOptions{Namespace: o.namespace, KMSKeyIDs: true}, false))
	if err != nil {
		return err
	}
	defer rep.Close()
	var findings []etcdscan.Finding
	err = rep.Each(func(f *etcdscan.Finding) error {
		if f.Has(etcdscan.ClassStoredVersion) {
			findings = append(findings, *f)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := o.Print(s.Out, render.Versions(rep, findings)); err != nil {
		return err
	}
	if len(findings) > 0 {
		return cli.Exit(ExitGhosts, nil)
	}
	return nil
}
